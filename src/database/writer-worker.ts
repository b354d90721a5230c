// The body of a writer thread's script: one writer, driven by the messages of the store that
// started the thread (see WriterThreadStore and writer-protocol.ts).
import { parentPort } from 'node:worker_threads';
import { type SessionWrite } from './message-store.js';
import {
  errorData,
  unpackWrites,
  type WrittenPositions,
  type WriterReply,
  type WriterRequest,
} from './writer-protocol.js';

/** A database's writer, in the thread that owns its write connection. */
export interface ThreadWriter {
  /**
   * Stores the writes in one transaction (see MessageStore.write), answered by position;
   * `storedAt` is the transaction's stamp (see StoredAtStamps).
   */
  write(writes: SessionWrite[], storedAt: number): Promise<WrittenPositions[]>;
  heartbeat(): Promise<void>;
  /** Removes the heartbeat rows of instances long gone. */
  prune(): Promise<void>;
  /** Closes the write connection; the thread ends after. */
  close(): Promise<void>;
  /** The write connection's settings as the database reports them, where it has any. */
  connectionSettings?(): Promise<unknown>;
}

/** What a writer gives the store's log: a line, at ERROR unless told WARN. */
export type WriterLog = (message: string, level?: 'warn') => void;

/** Serves the store's calls with the writer `start` makes (this thread's script calls it). */
export function serveWriter(start: (log: WriterLog) => ThreadWriter): void {
  const port = parentPort;
  if (!port) throw new Error('a writer script runs only as a worker thread');
  const writer = start((message, level) =>
    port.postMessage((level ? { log: message, level } : { log: message }) satisfies WriterReply),
  );
  port.on('message', (request: WriterRequest) => {
    perform(writer, request).then(
      (value) => port.postMessage({ id: request.id, value } satisfies WriterReply),
      (error: unknown) =>
        port.postMessage({ id: request.id, error: errorData(error) } satisfies WriterReply),
    );
  });
}

function perform(writer: ThreadWriter, request: WriterRequest): Promise<unknown> {
  switch (request.op) {
    case 'write':
      return writer.write(unpackWrites(request.writes), request.storedAt);
    case 'heartbeat':
      return writer.heartbeat();
    case 'prune':
      return writer.prune();
    case 'close':
      return writer.close();
    case 'settings':
      return writer.connectionSettings
        ? writer.connectionSettings()
        : Promise.reject(new Error('this writer has no connection settings to tell'));
  }
}
