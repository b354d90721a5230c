import { Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import pg from 'pg';
import { describeError } from '../common/errors/describe-error.js';
import { MESSAGES_CHANNEL, messageNotices, notifyAndCommit } from './commit-notices.js';
import { retryingDeadlocks } from './database-errors.js';
import { beat, pruneHeartbeats } from './heartbeat-sql.js';
import { beginWrite } from './message-sql.js';
import { TCP_KEEPALIVE } from './postgres-keepalive.js';
import {
  MessageStore,
  numberInserted,
  type SessionWrite,
  type WrittenSession,
} from './message-store.js';
import { writeSessions } from './session-writes.js';
import { StoredAtStamps } from './statement-runner.js';

/**
 * Write transactions at once. A write is a chain of round trips (BEGIN, the session rows, the
 * inserts, COMMIT), each waiting on the server and then on a busy event loop: with one
 * connection, PostgreSQL and Node take turns and neither is busy. A second lets one transaction
 * be on its way while the other waits (npm run bench). More would only queue behind the row
 * locks and the WAL flush, and take connections from other instances.
 */
export const POSTGRES_WRITE_CONNECTIONS = 2;

export interface PostgresStoreSettings {
  url: string;
  instanceId: string;
}

/**
 * Writes through connections of its own (a pool of POSTGRES_WRITE_CONNECTIONS), not TypeORM's,
 * so that the write path controls its transactions: a connection any statement of which failed
 * is destroyed rather than returned, and the next write connects afresh. Reads keep TypeORM's
 * pool.
 */
export class PostgresMessageStore
  extends MessageStore
  implements OnModuleInit, OnApplicationShutdown
{
  private readonly logger = new Logger(PostgresMessageStore.name);
  private readonly pool: pg.Pool;
  private readonly stamps = new StoredAtStamps();

  constructor(private readonly settings: PostgresStoreSettings) {
    super();
    this.pool = new pg.Pool({
      connectionString: settings.url,
      max: POSTGRES_WRITE_CONNECTIONS,
      // Fail a write within seconds when the server is unreachable, instead of hanging.
      connectionTimeoutMillis: 3000,
      query_timeout: 5000,
      // And PostgreSQL gives up first, on its side: a statement the driver stopped waiting for
      // would otherwise go on waiting in its backend (for a row lock held elsewhere, say), one
      // more backend for every write that timed out.
      statement_timeout: 4500,
      ...TCP_KEEPALIVE,
    });
    // An idle connection that the server or the network dropped: the next write reconnects.
    this.pool.on('error', (error) =>
      this.logger.warn(`PostgreSQL write connection lost: ${describeError(error)}`),
    );
  }

  override get concurrentWrites(): number {
    return POSTGRES_WRITE_CONNECTIONS;
  }

  // Housekeeping only: an instance must start (and journal) while the database is down.
  async onModuleInit(): Promise<void> {
    const statement = pruneHeartbeats('postgres', Date.now());
    await this.transaction('BEGIN', (client) =>
      client.query(statement.sql, statement.values),
    ).catch((error: unknown) =>
      this.logger.warn(`Old heartbeat rows not pruned at start: ${describeError(error)}`),
    );
  }

  async onApplicationShutdown(): Promise<void> {
    await this.pool.end();
  }

  async write(writes: SessionWrite[]): Promise<WrittenSession[]> {
    const results = await this.transaction(
      beginWrite('postgres'),
      (client) =>
        writeSessions(
          {
            rows: async (statement) =>
              (await client.query<Record<string, unknown>>(statement.sql, statement.values)).rows,
            changes: async (statement) =>
              (await client.query(statement.sql, statement.values)).rowCount ?? 0,
          },
          'postgres',
          writes,
          this.stamps.next(),
          this.settings.instanceId,
        ),
      // Inside the transaction: PostgreSQL delivers notices only if it commits, and in the
      // order transactions commit, so every instance hears a session's writes in one order.
      (written) =>
        notifyAndCommit(
          MESSAGES_CHANNEL,
          writes.flatMap((write, index) =>
            messageNotices(
              write.sessionId,
              written[index].inserted.map((record) => record.id),
            ),
          ),
        ),
    );
    numberInserted(results);
    return results;
  }

  async heartbeat(): Promise<void> {
    await this.transaction('BEGIN', async (client) => {
      const statement = beat('postgres', this.settings.instanceId, Date.now());
      await client.query(statement.sql, statement.values);
    });
  }

  /**
   * `work` in a transaction, tried again when PostgreSQL chose it as a deadlock's victim: it
   * changed nothing. Two write transactions (of this instance's connections, or of two
   * instances) meet only on ids stored in other sessions, as two imports of the same messages
   * into two sessions do; they insert in id order (inInsertOrder), so the second waits for the
   * first rather than deadlock. One chosen as a victim all the same must not be answered as an
   * outage: it would be journaled, and its replay would find the ids stored elsewhere.
   */
  private async transaction<T>(
    begin: string,
    work: (client: pg.PoolClient) => Promise<T>,
    end: (result: T) => string = () => 'COMMIT',
  ): Promise<T> {
    return retryingDeadlocks(() => this.transactionOnce(begin, work, end));
  }

  private async transactionOnce<T>(
    begin: string,
    work: (client: pg.PoolClient) => Promise<T>,
    end: (result: T) => string,
  ): Promise<T> {
    const client = await this.pool.connect();
    // A checked-out client is the caller's to watch: the pool stops listening to it, and an
    // 'error' event nobody hears (the socket reset by an outage) would end the process. The
    // query in flight fails with it anyway, and that is how the write learns of it.
    const onError = (error: Error) =>
      this.logger.warn(`PostgreSQL write connection lost: ${describeError(error)}`);
    client.on('error', onError);
    let result: T;
    try {
      await client.query(begin);
      result = await work(client);
      await client.query(end(result));
    } catch (error) {
      // Destroyed, not rolled back and reused: after a failed COMMIT or a broken socket its
      // state is unknown, and a fresh connection costs little next to an outage.
      client.off('error', onError);
      client.release(true);
      throw error;
    }
    client.off('error', onError);
    client.release();
    return result;
  }
}
