import { type Statement } from './sql-dialect.js';

/** Runs statements inside the caller's transaction. */
export interface StatementRunner {
  /** The rows the statement returns. */
  rows(statement: Statement): Promise<Record<string, unknown>[]>;
  /** How many rows the statement inserted or changed. */
  changes(statement: Statement): Promise<number>;
}

/**
 * `stored_at` for each transaction of one store: the clock, but never the same value twice, so
 * that the rows a transaction wrote can be told from ones stored before (see insertChunk in session-writes.ts).
 */
export class StoredAtStamps {
  private last = 0;

  constructor(private readonly now: () => number = Date.now) {}

  next(): number {
    this.last = Math.max(this.now(), this.last + 1);
    return this.last;
  }
}
