import { AsyncLocalStorage } from 'node:async_hooks';

/** What a log line learns of the request (or WebSocket connection) that caused it. */
export interface RequestContext {
  readonly requestId: string;
}

// One store for the process: a request's id reaches every line it causes, whichever module
// logs it, without being passed down (the logger reads it where the line is written).
const storage = new AsyncLocalStorage<RequestContext>();

/** Runs `work` (and everything it starts) as part of the request `requestId`. */
export function runWithRequestId<T>(requestId: string, work: () => T): T {
  return storage.run({ requestId }, work);
}

/**
 * The id of the request whose work is running, or undefined outside one. Exported by the
 * package, so that a host's own logger can add it to its lines (Scribe's logger does).
 */
export function currentRequestId(): string | undefined {
  return storage.getStore()?.requestId;
}
