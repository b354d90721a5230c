// The PostgreSQL store's worker thread: one PostgresWriter (see PostgresMessageStore).
import { workerData } from 'node:worker_threads';
import { PostgresWriter, type PostgresStoreSettings } from './postgres-writer.js';
import { serveWriter } from './writer-worker.js';

serveWriter(
  (log) =>
    new PostgresWriter(workerData as PostgresStoreSettings, (message) => log(message, 'warn')),
);
