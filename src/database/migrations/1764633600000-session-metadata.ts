import { type MigrationInterface, type QueryRunner } from 'typeorm';

/** A session's free-form metadata, set with updateSession (JSON text, as message metadata). */
export class SessionMetadata1764633600000 implements MigrationInterface {
  name = 'SessionMetadata1764633600000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "sessions" ADD COLUMN "metadata" text`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "sessions" DROP COLUMN "metadata"`);
  }
}
