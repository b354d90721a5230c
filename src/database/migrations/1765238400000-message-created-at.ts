import { type MigrationInterface, type QueryRunner } from 'typeorm';

/**
 * When an imported message was written where it came from (epoch ms), kept apart from
 * `accepted_at`. Why apart: `accepted_at` is this instance's clock, which orders keys, floors
 * the clock at start and tells a message from a deletion stamped after it; an imported time of
 * last year (or a forged one of next year) must move none of those. NULL for every message
 * accepted here, whose time is its acceptance.
 */
export class MessageCreatedAt1765238400000 implements MigrationInterface {
  name = 'MessageCreatedAt1765238400000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "messages" ADD COLUMN "created_at" bigint`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "messages" DROP COLUMN "created_at"`);
  }
}
