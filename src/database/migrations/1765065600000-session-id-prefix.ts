import { type MigrationInterface, type QueryRunner } from 'typeorm';

/**
 * Sessions by their id's bytes, for a caller limited to a session prefix (a JWT's
 * `session_prefix`): its sessions are one range of ids, `prefix <= id < successor(prefix)`
 * (see idPrefixRange). SQLite compares text as bytes (BINARY), so its primary key's own index
 * serves that range and this migration leaves it alone. PostgreSQL compares with the
 * database's collation, whose order is not the bytes' in general (en_US puts `a-b` after `ab`),
 * so its primary key cannot serve a prefix: this index, in `C` order, can.
 */
export class SessionIdPrefix1765065600000 implements MigrationInterface {
  name = 'SessionIdPrefix1765065600000';

  async up(queryRunner: QueryRunner): Promise<void> {
    if (queryRunner.connection.options.type !== 'postgres') return;
    await queryRunner.query(
      `CREATE INDEX "IDX_sessions_id_bytes" ON "sessions" ("id" COLLATE "C")`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    if (queryRunner.connection.options.type !== 'postgres') return;
    await queryRunner.query(`DROP INDEX "IDX_sessions_id_bytes"`);
  }
}
