import { type MessageRecord } from '../message/message-record.js';
import { type RefusedRecord, type Unavailable } from '../message/outcomes.js';
import { type JournalOnlyMessages, type KeyWindow } from '../message/held-messages.js';
import { type RecordLocation } from './journal-ledger.js';
import { type JournalLookup } from './journal-lookup.js';
import { type JournalScrub } from './journal-scrub.js';
import { type NextBatch, type JournalWriteBack, type Settled } from './journal-write-back.js';
import { type JournalAppend, type JournalWriter } from './journal-writer.js';
import { type JournaledRecord } from './journaled-record.js';
import { type Forgotten, type OwedRecords } from './owed-records.js';

/**
 * The journal as the transcript uses it (SpoolModule exports it): one door to its parts, each
 * of one job. The writer appends; OwedRecords knows what is owed and lets go of it; the
 * write-back offers journal-only records in batches and settles them; the lookup reads records
 * back for the transcript's reads; the scrub removes a redacted message's copies. This class
 * only hands each call to its part (see there for what it does), so that the callers name one
 * provider. Knows nothing of Nest, locks or logs.
 */
export class Journal {
  constructor(
    private readonly writer: JournalWriter,
    private readonly owed: OwedRecords,
    private readonly writeBack: JournalWriteBack,
    private readonly lookup: JournalLookup,
    private readonly scrubber: JournalScrub,
  ) {}

  /** Journals `records`, synced (JournalWriter.append). */
  append(records: MessageRecord[]): Promise<JournalAppend> {
    return this.writer.append(records);
  }

  /** These journaled records left memory: the drain reads them back (OwedRecords.release). */
  release(records: readonly JournaledRecord[]): Promise<void> {
    return this.owed.release(records);
  }

  /** These journaled records are stored or set aside: owed no more (OwedRecords.resolve). */
  resolve(records: readonly JournaledRecord[]): Promise<void> {
    return this.owed.resolve(records);
  }

  /** Keeps refused records in the set-aside log, then lets them go (OwedRecords.setAside). */
  setAside(
    refused: readonly (RefusedRecord & { location: RecordLocation | null })[],
  ): Promise<void> {
    return this.owed.setAside(refused);
  }

  /** The drain's next batch of the session's journal-only records (JournalWriteBack.nextBatch). */
  nextBatch(sessionId: string, max: number): Promise<NextBatch> {
    return this.writeBack.nextBatch(sessionId, max);
  }

  /** A batch of nextBatch is stored but `refused` (JournalWriteBack.settle). */
  settle(
    batch: readonly JournaledRecord[],
    refused: readonly RefusedRecord[],
  ): Promise<Settled | Unavailable> {
    return this.writeBack.settle(batch, refused);
  }

  /** Lets go of a deleted session's journal-only records (OwedRecords.forget). */
  forget(sessionId: string, acceptedUpTo?: number): Promise<Forgotten> {
    return this.owed.forget(sessionId, acceptedUpTo);
  }

  /** The session's journal-only record of this id, read back (JournalLookup.find). */
  find(sessionId: string, id: string): Promise<MessageRecord | undefined> {
    return this.lookup.find(sessionId, id);
  }

  /** The journal-only records a page of `window` may list (JournalLookup.readWindow). */
  readWindow(sessionId: string, window: KeyWindow, maxBytes: number): Promise<JournalOnlyMessages> {
    return this.lookup.readWindow(sessionId, window, maxBytes);
  }

  /** Removes every copy of the redacted messages `ids` (JournalScrub.scrub). */
  scrub(ids: readonly string[]): Promise<void> {
    return this.scrubber.scrub(ids);
  }
}
