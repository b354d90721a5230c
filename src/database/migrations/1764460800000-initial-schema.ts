import { type MigrationInterface, type QueryRunner } from 'typeorm';

/** Sessions and messages. The SQL is the common subset of SQLite and PostgreSQL. */
export class InitialSchema1764460800000 implements MigrationInterface {
  name = 'InitialSchema1764460800000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "sessions" (
        "id" varchar(128) PRIMARY KEY NOT NULL,
        "title" varchar(512),
        "created_at" bigint NOT NULL,
        "updated_at" bigint NOT NULL,
        "message_count" integer NOT NULL DEFAULT 0,
        "revision" bigint NOT NULL DEFAULT 0
      )`,
    );
    await queryRunner.query(
      `CREATE INDEX "IDX_sessions_updated" ON "sessions" ("updated_at", "id")`,
    );
    await queryRunner.query(
      `CREATE TABLE "messages" (
        "id" varchar(36) PRIMARY KEY NOT NULL,
        "session_id" varchar(128) NOT NULL REFERENCES "sessions" ("id") ON DELETE CASCADE,
        "order_key" varchar(64) NOT NULL,
        "role" varchar(16) NOT NULL,
        "content" text NOT NULL,
        "client_message_id" varchar(256),
        "tool_name" varchar(256),
        "tool_call_id" varchar(256),
        "tool_calls" text,
        "metadata" text,
        "accepted_at" bigint NOT NULL,
        "stored_at" bigint NOT NULL
      )`,
    );
    await queryRunner.query(
      `CREATE UNIQUE INDEX "UQ_messages_session_order" ON "messages" ("session_id", "order_key")`,
    );
    await queryRunner.query(
      `CREATE UNIQUE INDEX "UQ_messages_session_client_id" ON "messages" ("session_id", "client_message_id")`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "UQ_messages_session_client_id"`);
    await queryRunner.query(`DROP INDEX "UQ_messages_session_order"`);
    await queryRunner.query(`DROP TABLE "messages"`);
    await queryRunner.query(`DROP INDEX "IDX_sessions_updated"`);
    await queryRunner.query(`DROP TABLE "sessions"`);
  }
}
