import { Logger } from '@nestjs/common';
import { describeError } from '../common/errors/describe-error.js';
import { type AdoptionOutages } from './adoption-outages.js';
import { type BadLineKeeper } from './bad-line-keeper.js';
import { type BlockedFiles } from './blocked-files.js';
import { type JournalFiles } from './journal-files.js';
import { type AdoptionCheck } from './future-records.js';
import { type JournalIndex } from './journal-index.js';
import { type DiskEntry } from './journal-only-list.js';
import { type OwnerLock } from './owner-lock.js';
import { SET_ASIDE_LOG, ownerLockName, parseSegmentName } from './segment-names.js';
import { scanSegment } from './segment-scan.js';
import { rawField, type SetAsideEntry } from './set-aside-entry.js';

// Lines of adopted records kept decoded in memory for the write-back (the budget of one round).
const KEPT_RECORD_BYTES = 64 * 1024 * 1024;

/** What one round of adoption found. */
export interface AdoptionReport {
  /** Instances whose journals were taken over. */
  owners: string[];
  segments: number;
  /** Records owed, now in the index as journal-only entries, per session in acceptance order. */
  records: number;
  sessions: string[];
  /** Bad lines set aside. */
  setAside: number;
  /** The newest acceptance time among the records: later order keys must sort after it. */
  latestAcceptedAt: number;
}

interface AdoptedOwner {
  lock: OwnerLock;
  segments: Set<string>;
  // Its segments that could not be read yet: the lock is kept for them too.
  waiting: Set<string>;
}

/**
 * Takes over the journals of instances that are gone (this one's earlier runs, or another
 * process that shared the directory and died): at start, and now and then, so that a journal
 * left by an instance that stops later is replayed too. An owner's segments are read only once
 * its lock is held here, and the lock is kept until all of them are gone, so that two live
 * instances never replay, or delete, the same segment.
 */
export class JournalAdoption {
  private readonly logger = new Logger('Journal');
  private readonly adopted = new Map<string, AdoptedOwner>();
  // Journal bytes of the records adopted in this round that are kept in memory.
  private keptBytes = 0;

  constructor(
    private readonly files: JournalFiles,
    private readonly index: JournalIndex,
    private readonly ownInstanceId: string,
    private readonly blocked: BlockedFiles,
    // Bad lines and refused records go to the set-aside log through it (over the same index
    // and blocked list as this adoption).
    private readonly badLines: BadLineKeeper,
    // Lock files and segments of dead owners that cannot be used now (the same blocked list).
    private readonly outages: AdoptionOutages,
    private readonly keptRecordBytes: number = KEPT_RECORD_BYTES,
    // A good record that is refused all the same (from the future): set aside, record and all.
    private readonly refuse: AdoptionCheck = () => undefined,
  ) {}

  /**
   * Whether a round should run before the usual interval: a lock file, segment or the
   * set-aside log it found blocked may be tried again now (it may have been fixed).
   */
  get retryDue(): boolean {
    return (this.badLines.count > 0 && this.blocked.due(SET_ASIDE_LOG)) || this.outages.retryDue;
  }

  async adopt(): Promise<AdoptionReport> {
    const report: AdoptionReport = {
      owners: [],
      segments: 0,
      records: 0,
      sessions: [],
      setAside: 0,
      latestAcceptedAt: 0,
    };
    // Lines of earlier rounds that wait for the set-aside log: kept now, if it can be written.
    const earlier = await this.badLines.keep([]);
    await this.removeEmptied(earlier.emptied);
    report.setAside += earlier.kept;
    const byOwner = new Map<string, string[]>();
    const listed = (await this.files.list()).sort();
    for (const name of this.outages.vanished(listed)) {
      const owner = parseSegmentName(name)?.instanceId;
      const adopted = owner ? this.adopted.get(owner) : undefined;
      if (owner && adopted?.waiting.delete(name)) await this.releaseIfDone(owner);
    }
    for (const name of listed) {
      const segment = parseSegmentName(name);
      if (!segment || segment.instanceId === this.ownInstanceId) continue;
      if (this.adopted.get(segment.instanceId)?.segments.has(name)) continue;
      if (!this.outages.due(name)) continue;
      const names = byOwner.get(segment.instanceId) ?? [];
      names.push(name);
      byOwner.set(segment.instanceId, names);
    }
    const entries: DiskEntry[] = [];
    const seen = new Set<string>();
    this.keptBytes = 0;
    for (const [owner, names] of byOwner) {
      // One owner's unusable lock file (a directory, not SQLite, unreadable) holds back that
      // owner's journal only.
      const lock =
        this.adopted.get(owner)?.lock ?? (await this.outages.tryLock(owner, names.length));
      if (!lock) continue;
      try {
        // Appended one by one: a spread of a large journal would overflow the call stack.
        for (const entry of await this.adoptSegments(owner, lock, names, seen, report)) {
          entries.push(entry);
        }
      } catch (error) {
        this.logger.error(
          `Could not take over the journal of instance ${owner}: ${describeError(error)}; trying again later`,
        );
        if (!this.adopted.has(owner)) await lock.release();
      }
    }
    // Oldest first within each session, whichever segment or owner they came from.
    entries.sort((left, right) =>
      left.orderKey < right.orderKey ? -1 : left.orderKey > right.orderKey ? 1 : 0,
    );
    this.index.addJournalOnly(entries);
    report.records = entries.length;
    report.sessions = [...new Set(entries.map((entry) => entry.sessionId))];
    for (const owner of report.owners) await this.releaseIfDone(owner);
    return report;
  }

  /** A segment was deleted: an adopted owner with none left gives up its lock file. */
  async segmentRemoved(name: string): Promise<void> {
    const owner = parseSegmentName(name)?.instanceId;
    const adopted = owner ? this.adopted.get(owner) : undefined;
    if (!owner || !adopted) return;
    adopted.segments.delete(name);
    await this.releaseIfDone(owner);
  }

  /** At shutdown: the locks of owners not finished with go, for the next start to retake. */
  async releaseAll(): Promise<void> {
    for (const { lock } of this.adopted.values()) await lock.release();
    this.adopted.clear();
  }

  private async adoptSegments(
    owner: string,
    lock: OwnerLock,
    names: string[],
    seen: Set<string>,
    report: AdoptionReport,
  ): Promise<DiskEntry[]> {
    const scanned: {
      name: string;
      entries: DiskEntry[];
      bad: SetAsideEntry[];
      refused: SetAsideEntry[];
      bytes: number;
    }[] = [];
    // Copies this owner holds: they count as seen only once it is taken over (a failed one's
    // records must not make another owner's copy of them a duplicate to be deleted).
    const found = new Set<string>();
    const unread: string[] = [];
    for (const name of names) {
      const data = await this.outages.read(name);
      if (!data) {
        unread.push(name);
        continue;
      }
      const scan = scanSegment(data);
      const entries: DiskEntry[] = [];
      const refused: SetAsideEntry[] = [];
      for (const { record, offset, length } of scan.records) {
        // A second copy of a record (written again after a failed sync, or by two instances
        // that raced one client id) is owed once. By session and id: the same id in another
        // session (two imports of the same messages) is another record, which the write-back
        // sets aside once it finds the id stored as the other's (see StoredElsewhere).
        const copy = `${record.sessionId}\n${record.id}`;
        if (found.has(copy) || seen.has(copy)) continue;
        if (this.index.findJournalOnly(record.sessionId, record.id)) continue;
        found.add(copy);
        const reason = this.refuse(record);
        if (reason !== undefined) {
          refused.push({
            at: Date.now(),
            reason,
            source: name,
            offset,
            sessionId: record.sessionId,
            messageId: record.id,
            record,
          });
          continue;
        }
        // Kept while memory allows, so the write-back at start need not read and check every
        // line a second time.
        const entry: DiskEntry = {
          id: record.id,
          sessionId: record.sessionId,
          orderKey: record.orderKey,
          acceptedAt: record.acceptedAt,
          location: { segment: name, offset, length },
        };
        if (this.keptBytes + length <= this.keptRecordBytes) {
          this.keptBytes += length;
          entry.record = record;
        }
        entries.push(entry);
      }
      const bad = scan.bad.map((range) => ({
        at: Date.now(),
        reason: range.reason,
        source: name,
        offset: range.offset,
        ...rawField(data.subarray(range.offset, range.offset + range.length)),
      }));
      scanned.push({ name, entries, bad, refused, bytes: data.length });
    }
    const adopted = this.adopted.get(owner) ?? {
      lock,
      segments: new Set<string>(),
      waiting: new Set<string>(),
    };
    this.adopted.set(owner, adopted);
    for (const name of names) adopted.waiting.delete(name);
    for (const name of unread) adopted.waiting.add(name);
    const entries: DiskEntry[] = [];
    for (const segment of scanned) {
      this.index.addSegment(segment.name, true);
      this.index.addBytes(segment.name, segment.bytes);
    }
    // Bad lines are copied out before their segment can ever be deleted (or pin it until then).
    const bad = scanned.flatMap((segment) => [...segment.bad, ...segment.refused]);
    const kept = await this.badLines.keep(bad);
    await this.removeEmptied(kept.emptied);
    for (const segment of scanned) {
      for (const entry of segment.entries) {
        this.index.addLive(entry.sessionId, entry.acceptedAt, entry.location);
        report.latestAcceptedAt = Math.max(report.latestAcceptedAt, entry.acceptedAt);
      }
      if (this.index.liveIn(segment.name) === 0) {
        // Empty, or nothing in it but what was just set aside: nothing is owed. One that cannot
        // be deleted is found again next round; the records of the others are owed already.
        await this.files.remove(segment.name).catch(() => undefined);
        this.index.removeSegment(segment.name);
      } else {
        adopted.segments.add(segment.name);
      }
      for (const entry of segment.entries) entries.push(entry);
    }
    for (const copy of found) seen.add(copy);
    report.owners.push(owner);
    report.segments += scanned.length;
    report.setAside += kept.kept;
    return entries;
  }

  /** Adopted segments whose last pinned bad line was just set aside, with no record owed. */
  private async removeEmptied(names: readonly string[]): Promise<void> {
    for (const name of names) {
      if (this.index.liveIn(name) > 0) continue;
      try {
        await this.files.remove(name);
      } catch {
        continue;
      }
      this.index.removeSegment(name);
      await this.segmentRemoved(name);
    }
  }

  private async releaseIfDone(owner: string): Promise<void> {
    const adopted = this.adopted.get(owner);
    if (!adopted || adopted.segments.size > 0 || adopted.waiting.size > 0) return;
    this.adopted.delete(owner);
    // The file goes first: nobody can find it still there and think the owner alive.
    await this.files.remove(ownerLockName(owner)).catch(() => undefined);
    await this.files.remove(`${ownerLockName(owner)}-journal`).catch(() => undefined);
    await adopted.lock.release();
  }
}
