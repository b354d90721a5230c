import { type MigrationInterface, type QueryRunner } from 'typeorm';

/** One row per running instance, written by its health probe: a probe that really commits. */
export class Heartbeat1764547200000 implements MigrationInterface {
  name = 'Heartbeat1764547200000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "scribe_heartbeat" (
        "instance_id" varchar(64) PRIMARY KEY NOT NULL,
        "beat_at" bigint NOT NULL
      )`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "scribe_heartbeat"`);
  }
}
