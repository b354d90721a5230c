import pg from 'pg';
import {
  MESSAGES_CHANNEL,
  SCHEMA_SUFFIX_SQL,
  notifyAndCommit,
} from '../src/database/commit-notices.js';
import { createPostgresSchema, databaseKinds } from './support/databases.js';
import { Cleanups, eventually } from './support/fault-helpers.js';

// The end of a PostgreSQL write transaction, its notices and COMMIT in one simple query, on a
// real server: payloads arrive as written, whatever they hold, and a failing notice leaves the
// transaction uncommitted.
const describeOnPostgres = databaseKinds().includes('postgres') ? describe : describe.skip;

describeOnPostgres(notifyAndCommit.name, () => {
  const cleanups = new Cleanups();
  let writer: pg.Client;
  let heard: string[];

  beforeEach(async () => {
    const schema = await createPostgresSchema();
    cleanups.add(schema.drop);
    const connect = async () => {
      const client = new pg.Client({ connectionString: schema.url });
      await client.connect();
      cleanups.add(() => client.end());
      return client;
    };
    const listener = await connect();
    writer = await connect();
    heard = [];
    listener.on('notification', (message) => heard.push(message.payload ?? ''));
    const { rows } = await listener.query<{ suffix: string }>(
      `SELECT ${SCHEMA_SUFFIX_SQL} AS suffix`,
    );
    await listener.query(`LISTEN "${MESSAGES_CHANNEL}${rows[0].suffix}"`);
    await writer.query('CREATE TABLE rows (id text)');
  });

  afterEach(() => cleanups.run());

  it('delivers each payload as written, in order, once the transaction commits', async () => {
    const payloads = ["it's", 'back\\slash \\\\ two', "'; DROP TABLE rows; --", 'é 😀', 'plain'];

    await writer.query('BEGIN');
    await writer.query(`INSERT INTO rows VALUES ('kept')`);
    await writer.query(notifyAndCommit(MESSAGES_CHANNEL, payloads));

    await eventually(async () => expect(heard).toEqual(payloads));
    expect((await writer.query('SELECT id FROM rows')).rows).toEqual([{ id: 'kept' }]);
  });

  it('commits nothing, and announces nothing, when a notice fails', async () => {
    await writer.query('BEGIN');
    await writer.query(`INSERT INTO rows VALUES ('lost')`);

    // PostgreSQL refuses a payload of 8,000 bytes or more.
    await expect(
      writer.query(notifyAndCommit(MESSAGES_CHANNEL, ['fine', 'x'.repeat(8000)])),
    ).rejects.toThrow(/payload string too long/);
    await writer.query('ROLLBACK');

    expect((await writer.query('SELECT id FROM rows')).rows).toEqual([]);
    await writer.query(notifyAndCommit(MESSAGES_CHANNEL, ['after']));
    await eventually(async () => expect(heard).toEqual(['after']));
  });

  it('is a plain COMMIT when there is nothing to announce', () => {
    expect(notifyAndCommit(MESSAGES_CHANNEL, [])).toBe('COMMIT');
  });
});
