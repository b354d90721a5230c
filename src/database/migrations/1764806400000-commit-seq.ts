import { type MigrationInterface, type QueryRunner } from 'typeorm';

/**
 * Each message's place in its session's commit order: the session's revision counter, taken
 * under the session's row lock by the transaction that stored it, so that on PostgreSQL every
 * instance's writes to one session are numbered in the order they committed. A live reader
 * resumes after a number exactly (see MessageStream). Rows stored before have none.
 */
export class CommitSeq1764806400000 implements MigrationInterface {
  name = 'CommitSeq1764806400000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "messages" ADD COLUMN "commit_seq" bigint`);
    await queryRunner.query(
      `CREATE INDEX "IDX_messages_session_commit_seq" ON "messages" ("session_id", "commit_seq")`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "IDX_messages_session_commit_seq"`);
    await queryRunner.query(`ALTER TABLE "messages" DROP COLUMN "commit_seq"`);
  }
}
