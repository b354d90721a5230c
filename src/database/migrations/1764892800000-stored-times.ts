import { type MigrationInterface, type QueryRunner } from 'typeorm';

/**
 * Indexes the newest acceptance and deletion times, so that an instance finds both at start with
 * one index lookup each (StoredTimes): its clock moves past them whatever the wall clock says.
 */
export class StoredTimes1764892800000 implements MigrationInterface {
  name = 'StoredTimes1764892800000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE INDEX "IDX_messages_accepted_at" ON "messages" ("accepted_at")`,
    );
    await queryRunner.query(
      `CREATE INDEX "IDX_deleted_sessions_deleted_at" ON "deleted_sessions" ("deleted_at")`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "IDX_deleted_sessions_deleted_at"`);
    await queryRunner.query(`DROP INDEX "IDX_messages_accepted_at"`);
  }
}
