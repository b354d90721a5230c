import { type MigrationInterface, type QueryRunner } from 'typeorm';

/**
 * Edits and redactions of stored messages (editMessage, redactMessage). The row keeps its
 * place (order key, commit number) and holds its current state: its own `revision`, when it
 * was last edited, when and why it was redacted. All NULL for a message never changed (its
 * revision reads as 1), so that an append writes them as literals, binding nothing more. `change_seq` is the commit
 * number its last change took from the session's commit order, as an append's `commit_seq`
 * is: a live reader resuming after a number reads the messages committed after it and the
 * changes made after it (see CommitReads). Only changed rows have one, so the index on it is
 * partial and costs an append nothing.
 *
 * No row keeps an old content: an edit or a redaction overwrites the message in place, and
 * the search index follows it (the message-search migration's triggers fire on `content`).
 */
export class MessageChanges1765324800000 implements MigrationInterface {
  name = 'MessageChanges1765324800000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "messages" ADD COLUMN "revision" integer`);
    for (const column of ['edited_at', 'redacted_at', 'change_seq']) {
      await queryRunner.query(`ALTER TABLE "messages" ADD COLUMN "${column}" bigint`);
    }
    await queryRunner.query(`ALTER TABLE "messages" ADD COLUMN "redaction_reason" text`);
    await queryRunner.query(
      `CREATE INDEX "IDX_messages_session_change_seq" ON "messages" ("session_id", "change_seq") WHERE "change_seq" IS NOT NULL`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "IDX_messages_session_change_seq"`);
    for (const column of [
      'redaction_reason',
      'change_seq',
      'redacted_at',
      'edited_at',
      'revision',
    ]) {
      await queryRunner.query(`ALTER TABLE "messages" DROP COLUMN "${column}"`);
    }
  }
}
