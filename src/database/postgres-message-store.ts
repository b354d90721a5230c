import { Worker } from 'node:worker_threads';
import { type PostgresStoreSettings } from './postgres-writer.js';
import { WriterThreadStore, writerScript } from './writer-thread-store.js';

/**
 * The PostgreSQL message store: a PostgresWriter in a thread of its own (see
 * WriterThreadStore). A group's transaction is six round trips; from the main thread each
 * reply waited 3–5 ms for an event loop busy with requests, as long as the group's INSERT took.
 */
export class PostgresMessageStore extends WriterThreadStore<PostgresStoreSettings> {
  constructor(
    settings: PostgresStoreSettings,
    startWorker: (settings: PostgresStoreSettings) => Worker = (workerData) =>
      new Worker(postgresWriterScript(), { workerData }),
  ) {
    super('PostgreSQL', settings, startWorker);
  }
}

export function postgresWriterScript(): URL {
  return writerScript('postgres-writer.worker.js');
}
