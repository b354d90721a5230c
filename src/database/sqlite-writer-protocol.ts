import { type MessageRecord } from '../message/message-record.js';
import { type SessionWrite } from './message-store.js';

/** What the store asks of its writer thread. */
export type WriterCall =
  | { op: 'write'; writes: PackedWrites; storedAt: number }
  | { op: 'heartbeat' | 'prune' | 'settings' | 'close' };

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

// The fields of a record, in the order a packed write lists them.
const RECORD_FIELDS = [
  'id',
  'sessionId',
  'orderKey',
  'role',
  'content',
  'clientMessageId',
  'toolName',
  'toolCallId',
  'toolCalls',
  'metadata',
  'acceptedAt',
  'createdAt',
  'revision',
  'editedAt',
  'redactedAt',
  'redactionReason',
] as const satisfies readonly (keyof MessageRecord)[];

// Fails to compile when MessageRecord gains a field the list above does not carry.
type EveryFieldListed<Unlisted extends never> = Unlisted;
// (commitSeq and changeSeq are the database's answers, never part of a write.)
export type PackedRecordFields = EveryFieldListed<
  Exclude<keyof MessageRecord, (typeof RECORD_FIELDS)[number] | 'commitSeq' | 'changeSeq'>
>;

/**
 * Writes as they cross to the writer thread: each session's record count, and for each field
 * of a record the values of all records, in order. Structured cloning copies arrays of values
 * at a third of the cost of as many objects, on both threads, and a batch is hundreds of
 * records. Each array is made whole by `map` (dense, sized once), which clones fastest.
 */
export interface PackedWrites {
  sessionIds: string[];
  counts: number[];
  /** Each write's SessionWrite.after, null when absent. */
  after: ('stored' | null)[];
  columns: unknown[][];
}

export function packWrites(writes: SessionWrite[]): PackedWrites {
  const records = writes.flatMap((write) => write.records);
  return {
    sessionIds: writes.map((write) => write.sessionId),
    counts: writes.map((write) => write.records.length),
    after: writes.map((write) => write.after ?? null),
    columns: RECORD_FIELDS.map((name) => records.map((record) => record[name])),
  };
}

export function unpackWrites({ sessionIds, counts, after, columns }: PackedWrites): SessionWrite[] {
  let at = 0;
  return sessionIds.map((sessionId, index) => {
    const records: MessageRecord[] = [];
    for (let n = 0; n < counts[index]; n++, at++) {
      const record: Record<string, unknown> = {};
      RECORD_FIELDS.forEach((name, column) => {
        // An optional field a record did not have (createdAt, revision…) stays absent, as sent.
        const value = columns[column][at];
        if (value !== undefined) record[name] = value;
      });
      records.push(record as unknown as MessageRecord);
    }
    const mark = after[index];
    return mark ? { sessionId, records, after: mark } : { sessionId, records };
  });
}
