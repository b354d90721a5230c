// The SQLite store's worker thread: one SqliteWriter, driven by messages from the store (see
// SqliteMessageStore and sqlite-writer-protocol.ts).
import { parentPort, workerData } from 'node:worker_threads';
import {
  errorData,
  unpackWrites,
  type WriterReply,
  type WriterRequest,
} from './sqlite-writer-protocol.js';
import { SqliteWriter, type SqliteStoreSettings } from './sqlite-writer.js';

const port = parentPort;
if (!port) throw new Error('sqlite-writer.worker.js runs only as a worker thread');

const writer = new SqliteWriter(workerData as SqliteStoreSettings, (message) =>
  port.postMessage({ log: message } satisfies WriterReply),
);

port.on('message', (request: WriterRequest) => {
  perform(request).then(
    (value) => port.postMessage({ id: request.id, value } satisfies WriterReply),
    (error: unknown) =>
      port.postMessage({ id: request.id, error: errorData(error) } satisfies WriterReply),
  );
});

function perform(request: WriterRequest): Promise<unknown> {
  switch (request.op) {
    case 'write':
      return writer.write(unpackWrites(request.writes), request.storedAt);
    case 'heartbeat':
      return writer.heartbeat();
    case 'prune':
      return writer.prune();
    case 'settings':
      return writer.connectionSettings();
    case 'close':
      return writer.close();
  }
}
