import { Mutex } from 'async-mutex';
import { statSync } from 'node:fs';
import { errorCode } from '../common/errors/describe-error.js';
import { type SqliteSynchronousMode } from '../config/store-settings.js';
import { DatabaseFileChangedError } from './database-errors.js';
import { beat, pruneHeartbeats } from './heartbeat-sql.js';
import { beginWrite } from './message-sql.js';
import { type MessageRecord } from '../message/message-record.js';
import { type SessionWrite, type WrittenSession } from './message-store.js';
import { writeSessions } from './session-writes.js';
import { SqliteConnection } from './sqlite-connection.js';

export interface SqliteStoreSettings {
  path: string;
  synchronous: SqliteSynchronousMode;
  busyTimeoutMs: number;
  instanceId: string;
}

/** What one write did, told by position: the records at `skipped` were stored already. */
export interface WrittenPositions {
  skipped: number[];
  revision: number | null;
  /** The commit numbers of the records not skipped, in order. */
  seqs: number[];
  /** Their order keys as stored, when the write gave them new ones (WrittenSession.orderKeys). */
  orderKeys?: string[];
}

interface FileIdentity {
  dev: number;
  ino: number;
}

/**
 * Writes through a SQLite connection of its own, not TypeORM's. TypeORM's bookkeeping after a
 * failed COMMIT (SQLITE_FULL, an I/O error) believes a transaction is still open and turns
 * every later one into a savepoint that never commits, so writes answered as stored vanish at
 * the next start. Here any failed transaction closes the connection (SQLite rolls back what it
 * held) and the next write opens a fresh one. After every commit the file at the configured
 * path must still be the one opened: a write into a deleted or replaced file is not stored.
 * Runs in the store's worker thread (see SqliteMessageStore); `onError` hears what must be
 * logged.
 */
export class SqliteWriter {
  private connection: SqliteConnection | null = null;
  // One transaction at a time on the one connection.
  private readonly turns = new Mutex();
  private identity: FileIdentity | null = null;
  // Once the file changed under this process, nothing written here counts until a restart.
  private fileChanged: DatabaseFileChangedError | null = null;

  constructor(
    private readonly settings: SqliteStoreSettings,
    private readonly onError: (message: string) => void,
  ) {}

  /** Removes the heartbeat rows of instances long gone. */
  async prune(): Promise<void> {
    const statement = pruneHeartbeats('sqlite', Date.now());
    await this.transaction('BEGIN IMMEDIATE', (connection) =>
      connection.all(statement.sql, statement.values),
    );
  }

  /** Stores the writes in one transaction (see writeSessions), stamped `storedAt`. */
  async write(writes: SessionWrite[], storedAt: number): Promise<WrittenPositions[]> {
    const results = await this.transaction(beginWrite('sqlite'), (connection) =>
      writeSessions(
        {
          rows: (statement) => connection.all(statement.sql, statement.values),
          changes: (statement) => connection.run(statement.sql, statement.values),
        },
        'sqlite',
        writes,
        storedAt,
        this.settings.instanceId,
      ),
    );
    return results.map((result, index) => positionsOf(writes[index].records, result));
  }

  async heartbeat(): Promise<void> {
    await this.transaction('BEGIN IMMEDIATE', async (connection) => {
      const statement = beat('sqlite', this.settings.instanceId, Date.now());
      await connection.all(statement.sql, statement.values);
    });
  }

  /** The settings of the write connection as SQLite reports them, for checks and admins. */
  connectionSettings(): Promise<{ journalMode: string; synchronous: number }> {
    return this.turns.runExclusive(async () => {
      const connection = await this.connect();
      const [mode] = await connection.all('PRAGMA journal_mode');
      const [sync] = await connection.all('PRAGMA synchronous');
      return { journalMode: String(mode.journal_mode), synchronous: Number(sync.synchronous) };
    });
  }

  /**
   * In turn with the transactions: a close that came while a connection was still opening
   * (a start and a shutdown close together) would leave the driver's open to finish after the
   * worker thread is terminated, and the driver aborts the whole process when it does.
   */
  close(): Promise<void> {
    return this.turns.runExclusive(async () => {
      const connection = this.connection;
      this.connection = null;
      await connection?.close();
    });
  }

  private transaction<T>(
    begin: string,
    work: (connection: SqliteConnection) => Promise<T>,
  ): Promise<T> {
    return this.turns.runExclusive(() => this.transactionNow(begin, work));
  }

  private async transactionNow<T>(
    begin: string,
    work: (connection: SqliteConnection) => Promise<T>,
  ): Promise<T> {
    const connection = await this.connect();
    let result: T;
    try {
      await connection.exec(begin);
      result = await work(connection);
      await connection.exec('COMMIT');
    } catch (error) {
      // Whatever state the failure left (even a COMMIT that failed half way), closing ends it:
      // SQLite rolls back an open transaction on close, and the next write starts afresh.
      await this.discard(connection);
      throw error;
    }
    this.checkIdentity();
    return result;
  }

  private async connect(): Promise<SqliteConnection> {
    if (this.fileChanged) throw this.fileChanged;
    if (this.connection) return this.connection;
    const connection = await SqliteConnection.open(this.settings.path, this.settings.busyTimeoutMs);
    try {
      // A larger page cache keeps the indexes' upper pages in memory across transactions.
      await connection.exec(
        `PRAGMA synchronous = ${this.settings.synchronous}; PRAGMA foreign_keys = ON; PRAGMA cache_size = -32768;`,
      );
      this.checkIdentity();
    } catch (error) {
      await connection.close().catch(() => undefined);
      throw error;
    }
    this.connection = connection;
    return connection;
  }

  private async discard(connection: SqliteConnection): Promise<void> {
    if (this.connection === connection) this.connection = null;
    // SQLite has rolled back by the time close fails, if it does: nothing more to do.
    await connection.close().catch(() => undefined);
  }

  /**
   * The first call remembers the file; later ones fail for good once it is another one. A
   * synchronous stat of a file SQLite has just written costs microseconds, and this thread
   * serves nothing else.
   */
  private checkIdentity(): void {
    if (this.fileChanged) throw this.fileChanged;
    let current: FileIdentity;
    try {
      current = statSync(this.settings.path);
    } catch (error) {
      if (errorCode(error) !== 'ENOENT') throw error;
      throw this.noteFileChanged('deleted');
    }
    if (!this.identity) {
      this.identity = { dev: current.dev, ino: current.ino };
    } else if (current.dev !== this.identity.dev || current.ino !== this.identity.ino) {
      throw this.noteFileChanged('replaced');
    }
  }

  private noteFileChanged(what: 'deleted' | 'replaced'): DatabaseFileChangedError {
    this.fileChanged = new DatabaseFileChangedError(this.settings.path, what);
    this.onError(this.fileChanged.message);
    const connection = this.connection;
    this.connection = null;
    void connection?.close().catch(() => undefined);
    return this.fileChanged;
  }
}

/**
 * The positions of the skipped records. A record listed twice is inserted once: its first
 * copy counts as inserted, as writeSessions tells it.
 */
export function positionsOf(records: MessageRecord[], result: WrittenSession): WrittenPositions {
  const insertedLeft = new Map<MessageRecord, number>();
  for (const record of result.inserted) {
    insertedLeft.set(record, (insertedLeft.get(record) ?? 0) + 1);
  }
  const skipped: number[] = [];
  records.forEach((record, index) => {
    const left = insertedLeft.get(record) ?? 0;
    if (left > 0) insertedLeft.set(record, left - 1);
    else skipped.push(index);
  });
  return {
    skipped,
    revision: result.revision,
    seqs: result.seqs ?? [],
    ...(result.orderKeys ? { orderKeys: result.orderKeys } : {}),
  };
}
