// The SQLite store's worker thread: one SqliteWriter (see SqliteMessageStore).
import { workerData } from 'node:worker_threads';
import { SqliteWriter, type SqliteStoreSettings } from './sqlite-writer.js';
import { serveWriter } from './writer-worker.js';

serveWriter(
  (log) => new SqliteWriter(workerData as SqliteStoreSettings, (message) => log(message)),
);
