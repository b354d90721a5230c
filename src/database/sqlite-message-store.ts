import { Worker } from 'node:worker_threads';
import { type SqliteStoreSettings } from './sqlite-writer.js';
import { WriterThreadStore, writerScript } from './writer-thread-store.js';

/** The SQLite message store: a SqliteWriter in a thread of its own (see WriterThreadStore). */
export class SqliteMessageStore extends WriterThreadStore<SqliteStoreSettings> {
  constructor(
    settings: SqliteStoreSettings,
    startWorker: (settings: SqliteStoreSettings) => Worker = (workerData) =>
      new Worker(sqliteWriterScript(), { workerData }),
  ) {
    super('SQLite', settings, startWorker);
  }

  /** The settings of the write connection as SQLite reports them, for checks and admins. */
  async connectionSettings(): Promise<{ journalMode: string; synchronous: number }> {
    return (await this.call({ op: 'settings' })) as { journalMode: string; synchronous: number };
  }
}

export function sqliteWriterScript(): URL {
  return writerScript('sqlite-writer.worker.js');
}
