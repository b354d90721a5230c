import { MessageStore, type SessionWrite, type WriteResult } from '../database/message-store.js';

interface Submission {
  /** A write to store, or undefined for a probe of the database. */
  write?: SessionWrite;
  resolve: (result: WriteResult | undefined) => void;
  reject: (error: unknown) => void;
}

// Enough to amortise a transaction, small enough to keep one commit short.
const MAX_RECORDS_PER_TRANSACTION = 2000;

/**
 * Group commit: writes submitted while a transaction is running are stored together in the
 * next one, so concurrent appends share a transaction instead of queueing for one each.
 * Transactions run one at a time (SQLite has a single connection, and it keeps order simple).
 * Each write stays all-or-nothing; callers hold their session's lock while a write is pending,
 * so a session never has two writes in one group.
 */
export class CoalescingWriter {
  private waiting: Submission[] = [];
  private running = false;

  constructor(
    private readonly store: MessageStore,
    private readonly isConstraintViolation: (error: unknown) => boolean,
  ) {}

  async submit(write: SessionWrite): Promise<WriteResult> {
    return (await this.enqueue(write)) as WriteResult;
  }

  /** Probes the database for writability in turn with the writes. */
  async probe(): Promise<void> {
    await this.enqueue(undefined);
  }

  private enqueue(write: SessionWrite | undefined): Promise<WriteResult | undefined> {
    return new Promise<WriteResult | undefined>((resolve, reject) => {
      this.waiting.push({ write, resolve, reject });
      if (!this.running) void this.run();
    });
  }

  private async run(): Promise<void> {
    this.running = true;
    try {
      while (this.waiting.length > 0) {
        const group = this.takeGroup();
        try {
          if (group[0].write) {
            const results = await this.store.write(
              group.map((submission) => submission.write as SessionWrite),
            );
            group.forEach((submission, index) => submission.resolve(results[index]));
          } else {
            await this.store.probeWrite();
            group[0].resolve(undefined);
          }
        } catch (error) {
          await this.settleFailedGroup(group, error);
        }
      }
    } finally {
      this.running = false;
    }
  }

  /** The longest run of writes from the head that fits one transaction; a probe runs alone. */
  private takeGroup(): Submission[] {
    if (!this.waiting[0].write) return this.waiting.splice(0, 1);
    let records = 0;
    let count = 0;
    while (count < this.waiting.length) {
      const write = this.waiting[count].write;
      if (!write) break;
      if (count > 0 && records + write.records.length > MAX_RECORDS_PER_TRANSACTION) break;
      records += write.records.length;
      count += 1;
    }
    return this.waiting.splice(0, count);
  }

  // One write that breaks a constraint must not fail the others it shared a transaction with.
  // Any other error (database down, locked) fails the group and everything that queued up
  // behind it meanwhile: those would only wait out the same timeout again, and their callers
  // hold the messages safely queued instead.
  private async settleFailedGroup(group: Submission[], error: unknown): Promise<void> {
    if (!this.isConstraintViolation(error)) {
      for (const submission of [...group, ...this.waiting.splice(0)]) submission.reject(error);
      return;
    }
    if (group.length === 1) {
      group[0].reject(error);
      return;
    }
    for (const submission of group) {
      try {
        const [result] = await this.store.write([submission.write as SessionWrite]);
        submission.resolve(result);
      } catch (singleError) {
        submission.reject(singleError);
      }
    }
  }
}
