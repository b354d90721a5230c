import { type MigrationInterface, type QueryRunner } from 'typeorm';

/**
 * Full-text search over message content, kept by the transaction that stores, changes or
 * deletes a message (triggers), so that a search never finds a message that is not stored or
 * misses one that is. Messages stored before this migration are indexed afterwards, in short
 * batches, by SearchBackfill: the migration itself only records where that work ends, so it
 * is quick, and appends wait for no more than one batch at a time.
 *
 * SQLite: an FTS5 table (unicode61, diacritics removed) without a copy of the content
 * (`content=''`; snippets are cut from the message itself) whose rows are the messages'
 * rowids. `contentless_delete=1` lets a trigger delete a row by rowid whether it was indexed
 * yet or not, and the backfill delete a batch's rows before inserting them, so that a row
 * indexed twice (a rowid reused after a delete) is not. Rowids stay put as long as the file is
 * never VACUUMed (Scribe does not; a VACUUM must be followed by a rebuild of this index).
 *
 * PostgreSQL: a `search_vector` column set by a trigger before each insert and each change of
 * `content`, indexed with GIN. The text is decomposed (NFD), stripped of combining diacritics
 * (U+0300–U+036F), its punctuation made spaces (PostgreSQL's parser would keep `a@b.com` or
 * `3.14` whole, where SQLite's and the query's split them), lower-cased with a final sigma as
 * σ (JavaScript and PostgreSQL lower `Σ` differently), before the `simple` configuration
 * splits it: what SQLite's tokenizer does, with no extension needed (see searchForm).
 */
export class MessageSearch1765152000000 implements MigrationInterface {
  name = 'MessageSearch1765152000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    if (queryRunner.connection.options.type === 'postgres') {
      await this.upPostgres(queryRunner);
    } else {
      await this.upSqlite(queryRunner);
    }
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "message_search_backfill"`);
    if (queryRunner.connection.options.type === 'postgres') {
      await queryRunner.query(`DROP TRIGGER "messages_search" ON "messages"`);
      await queryRunner.query(`DROP FUNCTION "scribe_messages_search"()`);
      await queryRunner.query(`DROP INDEX "IDX_messages_search"`);
      await queryRunner.query(`ALTER TABLE "messages" DROP COLUMN "search_vector"`);
      return;
    }
    for (const name of ['insert', 'delete', 'update']) {
      await queryRunner.query(`DROP TRIGGER "messages_search_${name}"`);
    }
    await queryRunner.query(`DROP TABLE "messages_search"`);
  }

  private async upSqlite(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE VIRTUAL TABLE "messages_search" USING fts5(content, content='', contentless_delete=1, tokenize='unicode61 remove_diacritics 2')`,
    );
    await queryRunner.query(
      `CREATE TRIGGER "messages_search_insert" AFTER INSERT ON "messages" BEGIN
        INSERT INTO "messages_search" ("rowid", "content") VALUES (new."rowid", new."content");
      END`,
    );
    await queryRunner.query(
      `CREATE TRIGGER "messages_search_delete" AFTER DELETE ON "messages" BEGIN
        DELETE FROM "messages_search" WHERE "rowid" = old."rowid";
      END`,
    );
    await queryRunner.query(
      `CREATE TRIGGER "messages_search_update" AFTER UPDATE OF "content" ON "messages" BEGIN
        DELETE FROM "messages_search" WHERE "rowid" = old."rowid";
        INSERT INTO "messages_search" ("rowid", "content") VALUES (new."rowid", new."content");
      END`,
    );
    // What the backfill has left: the rows up to the last one stored before the triggers.
    await queryRunner.query(
      `CREATE TABLE "message_search_backfill" ("slot" integer PRIMARY KEY NOT NULL CHECK ("slot" = 1), "after_rowid" bigint NOT NULL, "last_rowid" bigint NOT NULL)`,
    );
    await queryRunner.query(
      `INSERT INTO "message_search_backfill" SELECT 1, 0, coalesce(max("rowid"), 0) FROM "messages"`,
    );
  }

  private async upPostgres(queryRunner: QueryRunner): Promise<void> {
    // No default: adding the column rewrites nothing, and the GIN index over NULLs is quick.
    await queryRunner.query(`ALTER TABLE "messages" ADD COLUMN "search_vector" tsvector`);
    // A tsvector holds at most 1 MiB: past it (some 650 KB of distinct words) the text's start
    // is indexed, and past that nothing, rather than the message refused, or every write
    // failing (a trigger's error fails its statement).
    await queryRunner.query(
      `CREATE FUNCTION "scribe_messages_search"() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        words text := translate(lower(regexp_replace(regexp_replace(
          normalize(NEW."content", NFD), '[\\u0300-\\u036f]', '', 'g'),
          '[[:punct:]]+', ' ', 'g')), 'ς', 'σ');
      BEGIN
        BEGIN
          NEW."search_vector" := to_tsvector('simple'::regconfig, words);
        EXCEPTION WHEN program_limit_exceeded THEN
          BEGIN
            NEW."search_vector" := to_tsvector('simple'::regconfig, left(words, 100000));
          EXCEPTION WHEN program_limit_exceeded THEN
            NEW."search_vector" := NULL;
          END;
        END;
        RETURN NEW;
      END $$`,
    );
    await queryRunner.query(
      `CREATE TRIGGER "messages_search" BEFORE INSERT OR UPDATE OF "content" ON "messages"
        FOR EACH ROW EXECUTE FUNCTION "scribe_messages_search"()`,
    );
    await queryRunner.query(
      `CREATE INDEX "IDX_messages_search" ON "messages" USING gin ("search_vector")`,
    );
    // The rows stored before the trigger have no vector: the backfill sets them, by id.
    await queryRunner.query(
      `CREATE TABLE "message_search_backfill" ("slot" integer PRIMARY KEY NOT NULL CHECK ("slot" = 1), "after_id" varchar(36) NOT NULL, "done" boolean NOT NULL)`,
    );
    await queryRunner.query(
      `INSERT INTO "message_search_backfill" VALUES (1, '', NOT EXISTS (SELECT 1 FROM "messages"))`,
    );
  }
}
