import { type DatabaseFailureKind } from '../database/database-errors.js';
import { type DatabaseHeartbeat } from '../database/database-heartbeat.js';
import { MessageStore, type SessionWrite } from '../database/message-store.js';
import { type Unavailable, type WriteAttempt, type Written } from '../message/outcomes.js';

interface Submission {
  /** A write to store, or undefined for a heartbeat. */
  write?: SessionWrite;
  isolateRefusals: boolean;
  resolve: (attempt: WriteAttempt) => void;
}

// Enough to amortise a transaction (write-back after an outage inserts far faster in big ones),
// small enough to keep one commit short: about a tenth of a second on SQLite here.
export const MAX_RECORDS_PER_TRANSACTION = 10_000;

/**
 * Group commit: writes submitted while a transaction is running are stored together in the
 * next one, so concurrent appends share a transaction instead of queueing for one each.
 * As many transactions run at once as the store has write connections (MessageStore's
 * concurrentWrites: SQLite has a single writer; on PostgreSQL a write is a chain of round trips,
 * and while one transaction waits on the server the next can be on its way). Callers hold their
 * session's lock while a write is pending, so a session never has two writes in one group; and
 * a group never starts while a write of one of its sessions is in a transaction, so that a
 * session's writes commit in the order they were submitted. A failure is an outcome, never a
 * rejection: a write the database refuses (a constraint, a bad value) must not fail the others
 * it shared a transaction with, so those are retried alone; with `isolateRefusals` (replays,
 * whose records were promised to their clients already) a refused write is split until the
 * refused records are found, and the rest is stored in order.
 */
export class CoalescingWriter implements DatabaseHeartbeat {
  private waiting: Submission[] = [];
  /** Transactions running now. */
  private running = 0;
  /** The sessions of the writes in the transactions running now. */
  private readonly writing = new Set<string>();

  constructor(
    private readonly store: MessageStore,
    private readonly classify: (error: unknown) => DatabaseFailureKind,
    private readonly describe: (error: unknown) => string,
  ) {}

  submit(write: SessionWrite, { isolateRefusals = false } = {}): Promise<WriteAttempt> {
    return new Promise((resolve) => {
      this.waiting.push({ write, isolateRefusals, resolve });
      this.startWhatCan();
    });
  }

  /**
   * Commits a heartbeat in turn with the writes: whether a write can commit now. A write of
   * nothing: `written` with nothing in it, or `unavailable`. It takes a connection of its own,
   * as a transaction of its own.
   */
  heartbeat(): Promise<Written | Unavailable> {
    // Never `refused`: a heartbeat writes nothing a database could refuse (see beat).
    return new Promise<WriteAttempt>((resolve) => {
      this.waiting.push({ isolateRefusals: false, resolve });
      this.startWhatCan();
    }) as Promise<Written | Unavailable>;
  }

  /** Starts transactions for what waits, in order, while a connection is free for them. */
  private startWhatCan(): void {
    while (this.waiting.length > 0 && this.running < this.store.concurrentWrites) {
      if (!this.waiting[0].write) {
        const beat = this.waiting.shift() as Submission;
        this.start([], () => this.beat(beat));
        continue;
      }
      const group = this.takeGroup();
      // The head's session has a write in a transaction: it waits for that one to end.
      if (group.length === 0) return;
      this.start(
        group.map((submission) => (submission.write as SessionWrite).sessionId),
        () => this.writeGroup(group),
      );
    }
  }

  private start(sessions: string[], transaction: () => Promise<void>): void {
    this.running += 1;
    for (const session of sessions) this.writing.add(session);
    void transaction().finally(() => {
      this.running -= 1;
      for (const session of sessions) this.writing.delete(session);
      this.startWhatCan();
    });
  }

  /**
   * The longest run of writes from the head that fits one transaction and whose sessions have
   * no write in a transaction now.
   */
  private takeGroup(): Submission[] {
    let records = 0;
    let count = 0;
    while (count < this.waiting.length) {
      const write = this.waiting[count].write;
      if (!write || this.writing.has(write.sessionId)) break;
      if (count > 0 && records + write.records.length > MAX_RECORDS_PER_TRANSACTION) break;
      records += write.records.length;
      count += 1;
    }
    return this.waiting.splice(0, count);
  }

  private async beat(submission: Submission): Promise<void> {
    try {
      await this.store.heartbeat();
      submission.resolve({
        kind: 'written',
        inserted: [],
        skipped: [],
        refused: [],
        revision: null,
      });
    } catch (error) {
      this.failEverything([submission], error);
    }
  }

  private async writeGroup(group: Submission[]): Promise<void> {
    let refusal: unknown;
    try {
      const writes = group.map((submission) => submission.write as SessionWrite);
      const results = await this.store.write(writes);
      group.forEach((submission, index) =>
        submission.resolve({ kind: 'written', refused: [], ...results[index] }),
      );
      return;
    } catch (error) {
      // Anything but a refusal fails the group and everything that queued up behind it
      // meanwhile: those would only wait out the same timeout, and their callers journal them.
      if (this.classify(error) === 'unavailable') return this.failEverything(group, error);
      refusal = error;
    }
    if (group.length === 1) {
      group[0].resolve(await this.refused(group[0], refusal));
      return;
    }
    for (const [index, submission] of group.entries()) {
      const attempt = await this.writeAlone(submission);
      if (attempt.kind === 'unavailable')
        return this.failEverything(group.slice(index), attempt.error);
      submission.resolve(attempt);
    }
  }

  /** One write in a transaction of its own. */
  private async writeAlone(submission: Submission): Promise<WriteAttempt> {
    try {
      const [result] = await this.store.write([submission.write as SessionWrite]);
      return { kind: 'written', refused: [], ...result };
    } catch (error) {
      if (this.classify(error) === 'unavailable') return { kind: 'unavailable', error };
      return this.refused(submission, error);
    }
  }

  /**
   * A write the database refused: as a whole, or, when isolating, halved until each refused
   * record stands alone, storing the rest in order (left half first, and nothing of the right
   * half once the left could not be written).
   */
  private async refused(submission: Submission, error: unknown): Promise<WriteAttempt> {
    const write = submission.write as SessionWrite;
    if (!submission.isolateRefusals) return { kind: 'refused', reason: this.describe(error) };
    if (write.records.length === 1) {
      return {
        kind: 'written',
        inserted: [],
        skipped: [],
        refused: [{ record: write.records[0], reason: this.describe(error) }],
        revision: null,
      };
    }
    const middle = Math.ceil(write.records.length / 2);
    const halves = [write.records.slice(0, middle), write.records.slice(middle)];
    const combined = {
      kind: 'written' as const,
      inserted: [],
      skipped: [],
      refused: [],
      revision: null,
    };
    const result: Written = combined;
    for (const records of halves) {
      const attempt = await this.writeAlone({ ...submission, write: { ...write, records } });
      if (attempt.kind !== 'written') return attempt;
      result.inserted.push(...attempt.inserted);
      result.skipped.push(...attempt.skipped);
      result.refused.push(...attempt.refused);
      result.revision = attempt.revision ?? result.revision;
    }
    return result;
  }

  private failEverything(group: Submission[], error: unknown): void {
    for (const submission of [...group, ...this.waiting.splice(0)]) {
      submission.resolve({ kind: 'unavailable', error });
    }
  }
}
