import { type MessageRecord } from '../../message/message-record.js';
import { type RefusedRecord } from '../../message/outcomes.js';
import { type JournalWriteBack } from '../journal-write-back.js';

/** What a spec's database made of one batch the drain offered. */
export type DrainStep =
  { kind: 'stored'; refused: RefusedRecord[] } | { kind: 'failed'; error: unknown };

/** What a drain came to: all of the session's journal-only records gone, or stopped (and kept). */
export type DrainOutcome =
  | { kind: 'drained'; stored: number; setAside: number }
  | { kind: 'failed'; stored: number; error: unknown };

/**
 * Drives the journal's drain steps as the write path does (DurableWriter): the next batch, stored
 * through `store` (not called for an empty one), then settled, each store and settle inside
 * `turn`; stops at the first failure or at a batch after which a record must wait. Counts what
 * was stored and set aside, for the specs of the journal's side.
 */
export async function drain(
  // The write-back itself, or the Journal that hands it the same two calls.
  journal: Pick<JournalWriteBack, 'nextBatch' | 'settle'>,
  sessionId: string,
  store: (records: MessageRecord[]) => Promise<DrainStep>,
  batchSize: number,
  turn: <T>(work: () => Promise<T>) => Promise<T> = (work) => work(),
): Promise<DrainOutcome> {
  let stored = 0;
  let setAside = 0;
  for (;;) {
    const next = await journal.nextBatch(sessionId, batchSize);
    if (next.kind === 'done') return { kind: 'drained', stored, setAside };
    if (next.kind === 'unavailable') return { kind: 'failed', stored, error: next.error };
    const step = await turn(async () => {
      let answer: DrainStep = { kind: 'stored', refused: [] };
      try {
        if (next.records.length > 0) answer = await store(next.records.map(({ record }) => record));
      } catch (error) {
        return { kind: 'failed' as const, error };
      }
      if (answer.kind === 'failed') return answer;
      const settled = await journal.settle(next.records, answer.refused);
      return settled.kind === 'unavailable'
        ? { kind: 'failed' as const, error: settled.error }
        : settled;
    });
    if (step.kind === 'failed') return { kind: 'failed', stored, error: step.error };
    stored += step.stored;
    setAside += step.setAside;
    if (next.waiting) return { kind: 'failed', stored, error: next.waiting };
  }
}
