import { type MigrationInterface, type QueryRunner } from 'typeorm';

/**
 * The database's identity: one row, a random id given by the first instance that asks (see
 * DatabaseIdentity), which a journal directory records too, so that an instance of another
 * database never replays a journal into the wrong one.
 */
export class DatabaseIdentity1764979200000 implements MigrationInterface {
  name = 'DatabaseIdentity1764979200000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "scribe_database" (
        "slot" integer PRIMARY KEY NOT NULL CHECK ("slot" = 1),
        "database_id" varchar(64) NOT NULL,
        "created_at" bigint NOT NULL
      )`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "scribe_database"`);
  }
}
