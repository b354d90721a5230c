import { type ScribeErrorCode } from '../../common/errors/scribe-error-code.js';
import { AppendStatus, weakestStatus } from '../../message/append-status.js';
import { type ImportAnswer } from '../transcript-importer.js';

/** What an import's answer says of its messages. */
export interface ImportCounts {
  /** Message lines taken, in all. */
  messages: number;
  /** Of those, the ones this import stored or journaled. */
  accepted: number;
  /** Of those, the ones held or stored already (an earlier import of the same file). */
  existing: number;
  /** How many are at each status now. */
  statuses: Record<AppendStatus, number>;
}

// A field an error names, as the import's lines are named: `line 7`, `line 7.message.content`.
const LINE = /^line (\d+)/;

/**
 * The counts of one import, line by line: the answer on success, and on a refusal what was
 * stored before the refused line. Every status is counted as the write path answered it.
 */
export class ImportTally {
  /** The number of the last line read. */
  lines = 0;
  private readonly counts: ImportCounts = {
    messages: 0,
    accepted: 0,
    existing: 0,
    statuses: { PERSISTED: 0, QUEUED: 0, BUFFERED: 0 },
  };

  get messages(): number {
    return this.counts.messages;
  }

  /** A stored batch's answers, one per message. */
  add(answers: readonly ImportAnswer[]): void {
    for (const { status, accepted } of answers) {
      this.counts.messages += 1;
      this.counts.statuses[status] += 1;
      if (accepted) this.counts.accepted += 1;
      else this.counts.existing += 1;
    }
  }

  /** Whether every message is stored (none held in the journal or memory). */
  allPersisted(): boolean {
    return this.counts.statuses.QUEUED === 0 && this.counts.statuses.BUFFERED === 0;
  }

  /** The answer of an import that took every line. */
  answer(sessionId: string, sessionRestored: boolean) {
    const statuses = this.counts.statuses;
    const present = (Object.keys(statuses) as AppendStatus[]).filter((key) => statuses[key] > 0);
    return {
      sessionId,
      ...this.counts,
      // The weakest promise among them, as appendMessages answers a batch's.
      status: present.length === 0 ? AppendStatus.PERSISTED : weakestStatus(present),
      sessionRestored,
    };
  }

  /** The answer of an import refused at a line: its error, and what was imported before it. */
  refusal(code: ScribeErrorCode, message: string, field?: string) {
    const line = field === undefined ? undefined : LINE.exec(field)?.[1];
    const extensions = line === undefined ? { code } : { code, line: Number(line) };
    return { errors: [{ message, extensions }], imported: this.counts };
  }
}
