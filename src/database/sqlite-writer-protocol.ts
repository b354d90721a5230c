import { type SessionWrite } from './message-store.js';

/** What the store asks of its writer thread. */
export type WriterCall =
  { op: 'write'; writes: SessionWrite[] } | { op: 'heartbeat' | 'prune' | 'settings' | 'close' };

/** A call with the id its answer comes back under. */
export type WriterRequest = { id: number } & WriterCall;

/** An error as it crosses the thread boundary: structured cloning keeps no `code`. */
export interface ErrorData {
  name: string;
  message: string;
  code?: string;
  errno?: number;
}

/** The writer thread's answer to request `id`, or a line for the store's log. */
export type WriterReply =
  | { id: number; value: unknown; error?: undefined }
  | { id: number; error: ErrorData }
  | { log: string };

export function errorData(error: unknown): ErrorData {
  if (!(error instanceof Error)) return { name: 'Error', message: String(error) };
  const { code, errno } = error as { code?: unknown; errno?: unknown };
  return {
    name: error.name,
    message: error.message,
    ...(typeof code === 'string' ? { code } : {}),
    ...(typeof errno === 'number' ? { errno } : {}),
  };
}

/** The error again, with the name, message, code and errno that describe and classify it. */
export function errorFrom(data: ErrorData): Error {
  const error = new Error(data.message);
  error.name = data.name;
  if (data.code !== undefined) Object.assign(error, { code: data.code });
  if (data.errno !== undefined) Object.assign(error, { errno: data.errno });
  return error;
}
