import { type MessageRecord } from '../../message/message-record.js';
import { splitRefused, type RefusedRecord, type Unavailable } from '../../message/outcomes.js';
import { type AdoptionReport } from '../../spool/journal-adoption.js';
import { type JournalIndex } from '../../spool/journal-index.js';
import { type Journal } from '../../spool/journal.js';
import { type NextBatch, type Settled } from '../../spool/journal-write-back.js';
import { type JournaledRecord } from '../../spool/journaled-record.js';
import { type Forgotten } from '../../spool/owed-records.js';
import { type SpoolService } from '../../spool/spool.service.js';
import { RecordUnreadableError } from '../../spool/record-unreadable.error.js';
import { type JournalAppend } from '../../spool/journal-writer.js';
import { type RecordLocation } from '../../spool/journal-ledger.js';

/** The part of the journal the write path uses: of SpoolService, Journal and JournalIndex. */
export type WritePathSpool = Pick<
  SpoolService,
  'path' | 'append' | 'adoptOrphans' | 'rejournalOrphans'
> &
  Pick<Journal, 'release' | 'resolve' | 'setAside' | 'nextBatch' | 'settle' | 'forget' | 'find'> &
  Pick<JournalIndex, 'hasJournalOnly' | 'sessionsWithJournalOnly' | 'isOnDisk'>;

/** Entry of the fake's set-aside log. */
export interface SetAsideRecord {
  record: MessageRecord;
  reason: string;
  location: RecordLocation | null;
}

/** The write path used the journal against its contract (resolved a record it does not owe). */
export class JournalMisuse extends Error {}

const PAGE = 100;

/**
 * The journal in memory, keeping the real one's contract: `append` answers `written` with a
 * location per record (or `failed` while the disk fails); `release` turns owed records into
 * journal-only ones, kept per session in acceptance order; `resolve` and `setAside` let go of owed
 * records, and `forget` of a session's journal-only ones; `nextBatch` offers a session's journal-only
 * records, a batch at a time (setting aside unreadable ones), and `settle` lets go of a stored
 * batch, setting aside its refused records (a batch never settled stays owed). Resolving or releasing a record the journal does not owe (twice, or
 * never journaled) is a bug of the caller: it throws JournalMisuse and is kept in `misuses`.
 */
export class FakeSpool implements WritePathSpool {
  readonly path = '/fake/pending_messages';
  readonly setAsideRecords: SetAsideRecord[] = [];
  /** Each nextBatch call, a step of a drain. */
  readonly batchCalls: { sessionId: string; batchSize: number }[] = [];
  readonly forgetCalls: { sessionId: string; acceptedUpTo: number }[] = [];
  readonly misuses: string[] = [];
  /** Journal-only records whose line no longer reads back: the drain sets them aside unread. */
  readonly unreadableIds = new Set<string>();
  /** Journal-only ids whose file cannot be read now: find() rejects for them. */
  readonly blockedIds = new Set<string>();
  /** Whether a blocked file owes records nobody has read yet (SpoolService.owesUnread). */
  owesUnread = false;
  appendCalls = 0;
  private readonly vanished = new Set<string>();
  /** Calls of rejournalOrphans (the retry loop's turn to journal a vanished segment's records). */
  rejournalCalls = 0;
  adoptCalls = 0;
  /** When set, the set-aside log cannot be written. */
  setAsideError: Error | null = null;
  /** When set, adoptOrphans rejects (the real one never does: it stands for a bug). */
  adoptError: Error | null = null;
  /** The directory cannot be read: adoptOrphans answers null. */
  directoryUnreadable = false;
  private diskError: Error | null = null;
  private readonly owed = new Map<string, JournaledRecord>();
  private readonly journalOnly = new Map<string, JournaledRecord[]>();
  private orphans: MessageRecord[] = [];
  private nextOffset = 0;

  /** This fake where the write path expects the real service (it uses only the part above). */
  get asService(): SpoolService {
    return this as unknown as SpoolService;
  }

  /** This fake where the write path expects the Journal. */
  get asJournal(): Journal {
    return this as unknown as Journal;
  }

  /** This fake where the write path expects the JournalIndex. */
  get asIndex(): JournalIndex {
    return this as unknown as JournalIndex;
  }

  failDisk(message = 'ENOSPC: no space left on device'): Error {
    this.diskError = new Error(message);
    return this.diskError;
  }

  healDisk(): void {
    this.diskError = null;
  }

  /** Records a gone instance journaled, for the next adoptOrphans to take over. */
  leaveOrphans(records: MessageRecord[]): void {
    this.orphans.push(...records);
  }

  /** Every record the journal still owes (in memory or journal-only), oldest journaled first. */
  owedRecords(sessionId?: string): MessageRecord[] {
    return [...this.owed.values()]
      .map(({ record }) => record)
      .filter((record) => sessionId === undefined || record.sessionId === sessionId);
  }

  /** The contents of the session's journal-only records, in acceptance order. */
  journalOnlyContents(sessionId: string): string[] {
    return (this.journalOnly.get(sessionId) ?? []).map(({ record }) => record.content);
  }

  async adoptOrphans(): Promise<AdoptionReport | null> {
    this.adoptCalls += 1;
    await Promise.resolve();
    if (this.adoptError) throw this.adoptError;
    if (this.directoryUnreadable) return null;
    const adopted = this.orphans.splice(0);
    const journaled = adopted.map((record) => this.journal(record, 'orphan-segment'));
    this.addJournalOnly(journaled);
    return {
      owners: adopted.length > 0 ? ['gone0001'] : [],
      segments: adopted.length > 0 ? 1 : 0,
      records: adopted.length,
      sessions: [...new Set(adopted.map((record) => record.sessionId))],
      setAside: 0,
      latestAcceptedAt: Math.max(0, ...adopted.map((record) => record.acceptedAt)),
    };
  }

  async append(records: MessageRecord[]): Promise<JournalAppend> {
    this.appendCalls += 1;
    // Synced before it answers, as the real journal.
    await Promise.resolve();
    if (this.diskError) return { kind: 'unavailable', error: this.diskError };
    return {
      kind: 'written',
      locations: records.map((record) => this.journal(record, 'own-segment').location),
    };
  }

  release(records: readonly JournaledRecord[]): Promise<void> {
    this.addJournalOnly(records.map((journaled) => this.owedAt(journaled, 'released')));
    return Promise.resolve();
  }

  async resolve(records: readonly JournaledRecord[]): Promise<void> {
    await Promise.resolve();
    for (const journaled of records) {
      const owed = this.owedAt(journaled, 'resolved');
      this.owed.delete(keyOf(owed.location));
      const sessionRecords = (this.journalOnly.get(owed.record.sessionId) ?? []).filter(
        (entry) => entry !== owed,
      );
      if (sessionRecords.length > 0) this.journalOnly.set(owed.record.sessionId, sessionRecords);
      else this.journalOnly.delete(owed.record.sessionId);
    }
  }

  async setAside(
    refused: readonly (RefusedRecord & { location: RecordLocation | null })[],
  ): Promise<void> {
    if (refused.length === 0) return;
    await Promise.resolve();
    if (this.setAsideError) throw this.setAsideError;
    this.setAsideRecords.push(
      ...refused.map(({ record, reason, location }) => ({ record, reason, location })),
    );
    await this.resolve(
      refused.flatMap(({ record, location }) => (location ? [{ record, location }] : [])),
    );
  }

  async nextBatch(sessionId: string, batchSize: number): Promise<NextBatch> {
    this.batchCalls.push({ sessionId, batchSize });
    const entries = (this.journalOnly.get(sessionId) ?? []).slice(0, batchSize);
    if (entries.length === 0) return { kind: 'done' };
    const unreadable = entries.filter(({ record }) => this.unreadableIds.has(record.id));
    this.setAsideRecords.push(
      ...unreadable.map(({ record, location }) => ({ record, reason: 'unreadable', location })),
    );
    await this.resolve(unreadable);
    const records = entries.filter((entry) => !unreadable.includes(entry));
    return { kind: 'batch', records, waiting: null };
  }

  async settle(
    batch: readonly JournaledRecord[],
    refusedRecords: readonly RefusedRecord[],
  ): Promise<Settled | Unavailable> {
    const { refused, kept } = splitRefused(batch, refusedRecords);
    try {
      await this.setAside(refused);
    } catch (error) {
      return { kind: 'unavailable', error };
    }
    await this.resolve(kept);
    return { kind: 'settled', stored: kept.length, setAside: refused.length };
  }

  /** Lets go of the session's journal-only records accepted at or before `acceptedUpTo`. */
  async forget(sessionId: string, acceptedUpTo = Number.POSITIVE_INFINITY): Promise<Forgotten> {
    this.forgetCalls.push({ sessionId, acceptedUpTo });
    const forgotten = (this.journalOnly.get(sessionId) ?? []).filter(
      ({ record }) => record.acceptedAt <= acceptedUpTo,
    );
    await this.resolve(forgotten);
    const times = forgotten.map(({ record }) => record.acceptedAt);
    return {
      count: forgotten.length,
      ...(times.length > 0 ? { newestAcceptedAt: Math.max(...times) } : {}),
    };
  }

  async find(sessionId: string, id: string): Promise<MessageRecord | undefined> {
    await Promise.resolve();
    if (this.blockedIds.has(id)) throw new RecordUnreadableError(id, 'segment unreadable: EACCES');
    return this.journalOnly.get(sessionId)?.find(({ record }) => record.id === id)?.record;
  }

  async rejournalOrphans(): Promise<void> {
    await Promise.resolve();
    this.rejournalCalls += 1;
    if (!this.diskError) this.vanished.clear();
  }

  /**
   * Every journal line owed now vanishes with its segment (SPOOL_DIR replaced): memory only
   * until rejournalOrphans() runs while the disk takes writes.
   */
  vanishAll(): void {
    for (const key of this.owed.keys()) this.vanished.add(key);
  }

  isOnDisk(location: RecordLocation): boolean {
    return !this.vanished.has(keyOf(location));
  }

  hasJournalOnly(sessionId: string): boolean {
    return this.journalOnly.has(sessionId);
  }

  sessionsWithJournalOnly(): string[] {
    return [...this.journalOnly.keys()];
  }

  private journal(record: MessageRecord, segment: string): JournaledRecord {
    const location = { segment, offset: this.nextOffset, length: PAGE };
    this.nextOffset += PAGE;
    const journaled = { record, location };
    this.owed.set(keyOf(location), journaled);
    return journaled;
  }

  private addJournalOnly(records: readonly JournaledRecord[]): void {
    for (const journaled of records) {
      const sessionRecords = this.journalOnly.get(journaled.record.sessionId) ?? [];
      if (sessionRecords.includes(journaled)) {
        this.misuse(`released message ${journaled.record.content} twice`);
      }
      sessionRecords.push(journaled);
      sessionRecords.sort((left, right) => compare(left.record.orderKey, right.record.orderKey));
      this.journalOnly.set(journaled.record.sessionId, sessionRecords);
    }
  }

  /** The owed record at `journaled`'s location, which must be that record. */
  private owedAt(journaled: JournaledRecord, what: string): JournaledRecord {
    const owed = this.owed.get(keyOf(journaled.location));
    if (owed?.record.id !== journaled.record.id) {
      this.misuse(`${what} message ${journaled.record.content}, which the journal does not owe`);
    }
    return owed;
  }

  private misuse(problem: string): never {
    this.misuses.push(problem);
    throw new JournalMisuse(problem);
  }
}

function keyOf(location: RecordLocation): string {
  return `${location.segment}:${location.offset}`;
}

function compare(left: string, right: string): number {
  return left < right ? -1 : left > right ? 1 : 0;
}
