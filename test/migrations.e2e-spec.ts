import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { DataSource } from 'typeorm';
import { MIGRATIONS, buildDataSourceOptions } from '../src/database/data-source-options.js';
import { createPostgresSchema, databaseKinds } from './support/databases.js';
import { temporaryDataDir } from './support/server-process.js';

// The migration scripts (npm run migration:show|run|revert) through the TypeORM CLI and the
// DataSource it is given, against the database `npm start` would open from the same
// variables; and a start against a schema newer than the code, refused with one line.

const SCRIPTS = (
  JSON.parse(readFileSync(resolve('package.json'), 'utf8')) as { scripts: Record<string, string> }
).scripts;
const NAMES = MIGRATIONS.map((migration) => migration.name);
const FUTURE = 'FutureSchema1999999999999';

/** How a process ended, and all it wrote. */
interface Run {
  code: number | null;
  output: string;
}

function run(command: string, args: string[], env: Record<string, string>): Promise<Run> {
  const child = spawn(command, args, {
    env: {
      PATH: `${resolve('node_modules/.bin')}:${process.env.PATH ?? ''}`,
      PORT: '0',
      NO_COLOR: '1',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  return new Promise((done) =>
    child.once('exit', (code) => {
      clearTimeout(timer);
      done({ code, output });
    }),
  );
}

/** `npm run migration:<name>` as package.json has it, the build left out (`npm test` built). */
function migration(name: 'show' | 'run' | 'revert', env: Record<string, string>): Promise<Run> {
  const script = SCRIPTS[`migration:${name}`];
  expect(script).toMatch(/^npm run build && typeorm migration:\w+ -d dist\/\S+\.js$/);
  return run('sh', ['-c', script.replace(/^npm run build && /, '')], env);
}

/** migration:show's verdict on each migration: true when it has run. */
async function shown(env: Record<string, string>): Promise<Record<string, boolean>> {
  const { code, output } = await migration('show', env);
  expect(code).toBe(0);
  const listed = [...output.matchAll(/^\[( |X)\] (?:\d+ )?(\w+)$/gm)];
  return Object.fromEntries(listed.map(([, mark, name]) => [name, mark === 'X']));
}

const all = (value: boolean) => Object.fromEntries(NAMES.map((name) => [name, value]));

describe.each(databaseKinds())('migrations on %s', (database) => {
  let env: Record<string, string>;
  let source: DataSource;
  let cleanup: () => Promise<void>;

  beforeEach(async () => {
    const dataDir = await temporaryDataDir();
    if (database === 'postgres') {
      const schema = await createPostgresSchema();
      env = { DATA_DIR: dataDir.path, DATABASE_URL: schema.url };
      source = new DataSource({ ...buildDataSourceOptions({ kind: 'postgres', url: schema.url }) });
      cleanup = async () => {
        await schema.drop();
        await dataDir.remove();
      };
    } else {
      env = { DATA_DIR: dataDir.path };
      source = new DataSource(
        buildDataSourceOptions({
          kind: 'sqlite',
          path: resolve(dataDir.path, 'scribe.sqlite'),
          synchronous: 'FULL',
        }),
      );
      cleanup = () => dataDir.remove();
    }
  });

  afterEach(async () => {
    if (source.isInitialized) await source.destroy();
    await cleanup();
  });

  it('shows, runs and reverts them through the scripts, on the configured database', async () => {
    if (database === 'sqlite') {
      // A SQLite file that is not there is refused, not made: a mistyped DATA_DIR would show
      // every migration pending, and migration:run would fill a database no server opens.
      const missing = { ...env, DATA_DIR: resolve(env.DATA_DIR, 'mistyped') };
      for (const name of ['show', 'run'] as const) {
        const refused = await migration(name, missing);
        expect(refused.code).not.toBe(0);
        expect(refused.output).toContain(
          `No SQLite database at ${resolve(missing.DATA_DIR, 'scribe.sqlite')}: the migration scripts act on a database that exists`,
        );
        expect(refused.output).not.toMatch(/^\s+at /m);
      }
      expect(await readdir(env.DATA_DIR)).toEqual([]);
      // An empty file is no database either (SQLite would fill it), and one that is not
      // SQLite's is refused in one line too.
      const file = resolve(env.DATA_DIR, 'scribe.sqlite');
      for (const [content, refusal] of [
        ['', 'No SQLite database at'],
        ['not a database\n', 'Could not open the SQLite database at'],
      ]) {
        await writeFile(file, content);
        const refused = await migration('show', env);
        expect(refused.code).not.toBe(0);
        expect(refused.output).toContain(`${refusal} ${file}`);
        expect(refused.output).not.toMatch(/^\s+at /m);
        expect(await readFile(file, 'utf8')).toBe(content);
      }
      await rm(file);
      // An existing file, as `npm start` leaves it before its first migration.
      await source.initialize();
      await source.destroy();
    }
    expect(await shown(env)).toEqual(all(false));

    const ran = await migration('run', env);
    expect(ran.code).toBe(0);
    expect(await shown(env)).toEqual(all(true));

    const reverted = await migration('revert', env);
    expect(reverted.code).toBe(0);
    expect(await shown(env)).toEqual({ ...all(true), [NAMES[NAMES.length - 1]]: false });

    expect((await migration('run', env)).code).toBe(0);
    expect(await shown(env)).toEqual(all(true));
  });

  it('refuses a start against a schema newer than the code, with one line, the data untouched', async () => {
    // The database exists (a SQLite file), as a first `npm start` would leave it.
    await source.initialize();
    await source.destroy();
    expect((await migration('run', env)).code).toBe(0);
    await source.initialize();
    // What a newer Scribe would have recorded, and a row of its data.
    await source.query(
      `INSERT INTO "migrations" ("timestamp", "name") VALUES (1999999999999, '${FUTURE}')`,
    );
    await source.query(
      `INSERT INTO "sessions" ("id", "title", "created_at", "updated_at", "message_count", "revision") VALUES ('kept', 'kept', 1, 1, 0, 1)`,
    );
    const snapshot = async () => ({
      migrations: await source.query(`SELECT "name" FROM "migrations" ORDER BY "id"`),
      sessions: await source.query(`SELECT "id", "updated_at" FROM "sessions"`),
      identity: await source.query(`SELECT * FROM "scribe_database"`),
      messages: await source.query(`SELECT COUNT(*) AS "count" FROM "messages"`),
    });
    const before = await snapshot();
    await source.destroy();

    const start = await run(process.execPath, [resolve('dist/main.js')], env);

    expect(start.code).toBe(1);
    const refusal = start.output.split('\n').filter((line) => /schema is newer/.test(line));
    expect(refusal).toEqual([
      expect.stringMatching(
        new RegExp(
          `FATAL \\[Scribe\\] Failed to start: The database schema is newer than this Scribe: it records migration\\(s\\) ${FUTURE} that this version does not know`,
        ),
      ),
    ]);
    expect(start.output).not.toMatch(/^\s+at /m);
    expect(start.output).not.toMatch(/GraphQL API ready/);
    await source.initialize();
    expect(await snapshot()).toEqual(before);
  });
});
