import { type MigrationInterface, type QueryRunner } from 'typeorm';

/**
 * One row per deleted session and when: a message accepted before that moment that reaches the
 * database later (a journal replayed after a crash, another instance's backlog) is dropped
 * rather than bring the session back.
 */
export class DeletedSessions1764720000000 implements MigrationInterface {
  name = 'DeletedSessions1764720000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "deleted_sessions" (
        "id" varchar(128) PRIMARY KEY NOT NULL,
        "deleted_at" bigint NOT NULL
      )`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "deleted_sessions"`);
  }
}
