import { jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import { EventEmitter2 } from '@nestjs/event-emitter';
import { CapturingLogger } from '../common/testing/capturing-logger.js';
import { deferred, type Deferred } from '../common/testing/deferred.js';
import {
  Tombstones,
  type DeletedRows,
  type SessionDeletion,
} from '../database/session-deletion.js';
import { SessionDeleted } from '../message/message-events.js';
import { type MessageRecord } from '../message/message-record.js';
import { OrderKeyGenerator } from '../message/order-key.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { type Forgotten } from '../spool/owed-records.js';
import { ACCEPTED_AT, messageRecord } from '../spool/testing/records.js';
import { SessionBacklog } from './session-backlog.js';
import { SessionEraser } from './session-eraser.js';
import { FakeSpool } from './testing/fake-spool.js';

// When this instance deletes (Date.now() during erase).
const NOW = ACCEPTED_AT + 1_000;

/**
 * The database's side of deletions: `delete` records its call, leaves a tombstone and answers
 * `rows`, or rejects with `failure`; the next delete can be held. `deletedAt` answers the
 * tombstone, or rejects with `lookupFailure`.
 */
class FakeSessionDeletion extends Tombstones {
  readonly deletes: { sessionId: string; at: number }[] = [];
  readonly lookups: string[] = [];
  readonly tombstones = new Map<string, number>();
  rows: DeletedRows = { existed: true, messages: 0 };
  failure: Error | null = null;
  lookupFailure: Error | null = null;
  private held: Deferred | null = null;

  /** This fake where the eraser expects the real class (it uses `delete` only). */
  get asDeletion(): SessionDeletion {
    return this as unknown as SessionDeletion;
  }

  holdNextDelete(): Deferred {
    this.held = deferred();
    return this.held;
  }

  async delete(sessionId: string, at: number): Promise<DeletedRows> {
    this.deletes.push({ sessionId, at });
    const held = this.held;
    this.held = null;
    await held?.promise;
    if (this.failure) throw this.failure;
    this.tombstones.set(sessionId, at);
    return this.rows;
  }

  async deletedAt(sessionId: string): Promise<number | undefined> {
    this.lookups.push(sessionId);
    await Promise.resolve();
    if (this.lookupFailure) throw this.lookupFailure;
    return this.tombstones.get(sessionId);
  }
}

/** A journal whose journal-only records cannot be let go (the segment cannot be read, say). */
class UnforgettingSpool extends FakeSpool {
  readonly failure = new Error('EIO: i/o error, unlink');

  override async forget(): Promise<Forgotten> {
    await Promise.resolve();
    throw this.failure;
  }
}

const ids = (records: readonly MessageRecord[]) => records.map((record) => record.id);

/** One turn of the event loop: what was started and is not held has run by then. */
const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

describe(SessionEraser.name, () => {
  let backlog: SessionBacklog;
  let deletion: FakeSessionDeletion;
  let spool: FakeSpool;
  let events: EventEmitter2;
  let announced: string[];
  let logger: CapturingLogger;
  let clock: OrderKeyGenerator;
  let metrics: MetricsService;
  let sut: SessionEraser;

  function build(journal: FakeSpool = new FakeSpool()): void {
    spool = journal;
    clock = new OrderKeyGenerator('e', () => NOW);
    metrics = new MetricsService();
    sut = new SessionEraser(
      backlog,
      deletion.asDeletion,
      deletion,
      spool.asJournal,
      events,
      clock,
      metrics,
    );
  }

  beforeEach(() => {
    jest.spyOn(Date, 'now').mockReturnValue(NOW);
    backlog = new SessionBacklog();
    deletion = new FakeSessionDeletion();
    events = new EventEmitter2();
    announced = [];
    events.on(SessionDeleted.event, (event: SessionDeleted) => announced.push(event.sessionId));
    logger = new CapturingLogger();
    Logger.overrideLogger(logger);
    build();
  });

  afterEach(() => {
    jest.restoreAllMocks();
    // The eraser never lets go of a journal line the journal does not owe.
    expect(spool.misuses).toEqual([]);
  });

  /** Holds `records` in memory, journaled (QUEUED) or not (BUFFERED). */
  async function hold(records: MessageRecord[], journaled = true): Promise<void> {
    const appended = journaled ? await spool.append(records) : undefined;
    const locations = appended?.kind === 'written' ? appended.locations : [];
    await backlog.withSession(records[0].sessionId, async (backlog) =>
      backlog.push(
        records.map((record, index) => ({ record, location: locations[index] ?? null })),
      ),
    );
  }

  /** Journals `records` and lets them leave memory: only the disk holds them. */
  async function onJournalOnly(records: MessageRecord[]): Promise<void> {
    const appended = await spool.append(records);
    if (appended.kind !== 'written') throw new Error('not journaled');
    await spool.release(
      records.map((record, index) => ({ record, location: appended.locations[index] })),
    );
  }

  const held = (sessionId: string) => backlog.of(sessionId).map(({ record }) => record.id);
  const owed = (sessionId: string) => ids(spool.owedRecords(sessionId));
  const journalOnly = (sessionId: string) => spool.journalOnlyContents(sessionId);

  /** Lines the eraser logged at `level`. */
  const eraserLines = (level: string) =>
    logger.lines
      .filter((line) => line.level === level && line.params.at(-1) === 'SessionEraser')
      .map((line) => line.message);

  describe('erase', () => {
    it('deletes the session in the database, drops what memory and the journal hold of it, and answers the counts', async () => {
      const s = [1, 2, 3, 4].map((sequence) => messageRecord('s', sequence));
      await onJournalOnly(s.slice(0, 2));
      await hold([s[2]]);
      await hold([s[3]], false);
      deletion.rows = { existed: true, messages: 7 };

      expect(await sut.erase('s')).toEqual({ existed: true, stored: 7, held: 4 });

      expect(deletion.deletes).toEqual([{ sessionId: 's', at: NOW }]);
      expect(held('s')).toEqual([]);
      expect(backlog.total).toBe(0);
      expect(backlog.totalBuffered).toBe(0);
      expect(owed('s')).toEqual([]);
      expect(spool.hasJournalOnly('s')).toBe(false);
      expect(spool.forgetCalls).toEqual([{ sessionId: 's', acceptedUpTo: Infinity }]);
      expect(announced).toEqual(['s']);
    });

    it('answers the deletion, announcing it, when what is held cannot be dropped after the database deleted', async () => {
      build(new UnforgettingSpool());
      await hold([messageRecord('s', 1)]);
      deletion.rows = { existed: true, messages: 2 };

      expect(await sut.erase('s')).toEqual({ existed: true, stored: 2, held: 0 });

      expect(announced).toEqual(['s']);
      expect(eraserLines('warn')).toEqual([
        'Deleted session s, but could not drop what is held of it yet: EIO: i/o error, unlink',
      ]);
    });

    it('leaves what is held of other sessions', async () => {
      const [t1, t2] = [1, 2].map((sequence) => messageRecord('t', sequence));
      await onJournalOnly([t1]);
      await hold([t2]);
      await hold([messageRecord('s', 1)]);

      expect(await sut.erase('s')).toEqual({ existed: true, stored: 0, held: 1 });

      expect(held('t')).toEqual([t2.id]);
      expect(journalOnly('t')).toEqual([t1.content]);
      expect(owed('t')).toEqual([t1.id, t2.id]);
    });

    it('answers what the database says of a session it does not hold, holding nothing of it either', async () => {
      deletion.rows = { existed: false, messages: 0 };

      expect(await sut.erase('gone')).toEqual({ existed: false, stored: 0, held: 0 });

      expect(deletion.deletes).toEqual([{ sessionId: 'gone', at: NOW }]);
      expect(announced).toEqual(['gone']);
    });

    it('drops nothing, and announces nothing, when the database cannot delete', async () => {
      const s = [1, 2, 3].map((sequence) => messageRecord('s', sequence));
      await onJournalOnly([s[0]]);
      await hold([s[1]]);
      await hold([s[2]], false);
      const down = new Error('connection refused');
      deletion.failure = down;

      await expect(sut.erase('s')).rejects.toBe(down);

      expect(held('s')).toEqual([s[1].id, s[2].id]);
      expect(backlog.totalBuffered).toBe(1);
      expect(journalOnly('s')).toEqual([s[0].content]);
      expect(owed('s')).toEqual([s[0].id, s[1].id]);
      expect(spool.forgetCalls).toEqual([]);
      expect(announced).toEqual([]);

      // The lock was let go: a retry once the database is back deletes it all.
      deletion.failure = null;
      expect(await sut.erase('s')).toEqual({ existed: true, stored: 0, held: 3 });
      expect(owed('s')).toEqual([]);
    });

    it('drops nothing until the database has deleted', async () => {
      const a = messageRecord('s', 1);
      await hold([a]);
      const gate = deletion.holdNextDelete();

      const erasing = sut.erase('s');
      await tick();
      expect(deletion.deletes).toHaveLength(1);
      expect(held('s')).toEqual([a.id]);
      expect(owed('s')).toEqual([a.id]);

      gate.resolve();
      expect(await erasing).toEqual({ existed: true, stored: 0, held: 1 });
      expect(held('s')).toEqual([]);
    });

    it("waits for the session's lock: an append under way is dropped too, once it is done", async () => {
      const [a, b] = [1, 2].map((sequence) => messageRecord('s', sequence));
      await hold([a]);
      const appendDone = deferred();
      const appending = backlog.withSession('s', async (backlog) => {
        await appendDone.promise;
        backlog.push([{ record: b, location: null }]);
      });

      const erasing = sut.erase('s');
      await tick();
      expect(deletion.deletes).toEqual([]);

      appendDone.resolve();
      await appending;
      expect(await erasing).toEqual({ existed: true, stored: 0, held: 2 });
      expect(held('s')).toEqual([]);
    });

    it('announces the deletion once this instance holds nothing of the session', async () => {
      const [a, b] = [1, 2].map((sequence) => messageRecord('s', sequence));
      await onJournalOnly([a]);
      await hold([b]);
      const seen: { held: number; owed: number }[] = [];
      events.on(SessionDeleted.event, () =>
        seen.push({ held: backlog.size('s'), owed: owed('s').length }),
      );

      await sut.erase('s');

      expect(seen).toEqual([{ held: 0, owed: 0 }]);
    });
  });

  describe('onSessionDeleted', () => {
    it('drops what this instance holds of the session, and says how much', async () => {
      const s = [1, 2, 3].map((sequence) => messageRecord('s', sequence));
      await onJournalOnly([s[0]]);
      await hold([s[1]]);
      await hold([s[2]], false);

      await sut.onSessionDeleted(new SessionDeleted('s'));

      expect(held('s')).toEqual([]);
      expect(backlog.totalBuffered).toBe(0);
      expect(owed('s')).toEqual([]);
      expect(spool.hasJournalOnly('s')).toBe(false);
      expect(eraserLines('log')).toEqual(['Dropped 3 held message(s) of deleted session s']);
      // Another instance deleted it: the database is not asked again, nor the deletion repeated.
      expect(deletion.deletes).toEqual([]);
      expect(announced).toEqual([]);
    });

    it('says so for a single message dropped', async () => {
      await hold([messageRecord('s', 1)]);

      await sut.onSessionDeleted(new SessionDeleted('s'));

      expect(eraserLines('log')).toEqual(['Dropped 1 held message(s) of deleted session s']);
    });

    it('logs nothing when it holds nothing of the session (this instance deleted it)', async () => {
      await hold([messageRecord('t', 1)]);

      await sut.onSessionDeleted(new SessionDeleted('s'));

      expect(logger.lines).toEqual([]);
      expect(held('t')).toEqual(['t-1']);
    });

    it("drops under the session's lock: an append under way is dropped too, once it is done", async () => {
      const [a, b] = [1, 2].map((sequence) => messageRecord('s', sequence));
      await hold([a]);
      const appendDone = deferred();
      const appending = backlog.withSession('s', async (backlog) => {
        await appendDone.promise;
        backlog.push([{ record: b, location: null }]);
      });

      const dropping = sut.onSessionDeleted(new SessionDeleted('s'));
      await tick();
      expect(held('s')).toEqual([a.id]);

      appendDone.resolve();
      await appending;
      await dropping;
      expect(held('s')).toEqual([]);
      expect(eraserLines('log')).toEqual(['Dropped 2 held message(s) of deleted session s']);
    });

    it('logs a warning, and does not reject, when what is held cannot be dropped', async () => {
      build(new UnforgettingSpool());
      await hold([messageRecord('s', 1)]);

      await expect(sut.onSessionDeleted(new SessionDeleted('s'))).resolves.toBeUndefined();

      expect(eraserLines('warn')).toEqual([
        'Could not drop what is held of deleted session s: EIO: i/o error, unlink',
      ]);
      expect(eraserLines('log')).toEqual([]);
    });
  });

  describe('prune', () => {
    const DELETED_AT = ACCEPTED_AT + 2;

    const prune = (sessionId: string) =>
      backlog.withSession(sessionId, (backlog) => sut.prune(backlog));

    it('answers false, dropping nothing, when the tombstones cannot be read', async () => {
      const s = [1, 2].map((sequence) => messageRecord('s', sequence));
      await onJournalOnly([s[0]]);
      await hold([s[1]]);
      deletion.tombstones.set('s', DELETED_AT);
      deletion.lookupFailure = new Error('connection refused');

      expect(await prune('s')).toBe('stopped');

      expect(held('s')).toEqual([s[1].id]);
      expect(journalOnly('s')).toEqual([s[0].content]);
      expect(owed('s')).toEqual([s[0].id, s[1].id]);
      expect(spool.forgetCalls).toEqual([]);
    });

    it('answers true, dropping nothing, for a session never deleted', async () => {
      const s = [1, 2].map((sequence) => messageRecord('s', sequence));
      await onJournalOnly([s[0]]);
      await hold([s[1]]);
      deletion.tombstones.set('t', DELETED_AT);

      expect(await prune('s')).toBe('done');

      expect(deletion.lookups).toEqual(['s']);
      expect(held('s')).toEqual([s[1].id]);
      expect(journalOnly('s')).toEqual([s[0].content]);
      expect(owed('s')).toEqual([s[0].id, s[1].id]);
      expect(spool.forgetCalls).toEqual([]);
    });

    it('drops the entries accepted at or before the deletion, letting go of their journal lines, and keeps the later ones', async () => {
      // Accepted at ACCEPTED_AT + 1 … + 4: the second exactly when the session was deleted.
      const s = [1, 2, 3, 4].map((sequence) => messageRecord('s', sequence));
      await hold([s[0]]);
      await hold([s[1]], false);
      await hold([s[2]]);
      await hold([s[3]], false);
      deletion.tombstones.set('s', DELETED_AT);

      expect(await prune('s')).toBe('done');

      expect(held('s')).toEqual([s[2].id, s[3].id]);
      expect(backlog.totalBuffered).toBe(1);
      expect(owed('s')).toEqual([s[2].id]);
      expect(spool.forgetCalls).toEqual([{ sessionId: 's', acceptedUpTo: DELETED_AT }]);
    });

    it('forgets the journal-only records accepted at or before the deletion, keeping the later ones', async () => {
      const s = [1, 2, 3, 4].map((sequence) => messageRecord('s', sequence));
      await onJournalOnly(s.slice(0, 3));
      await hold([s[3]]);
      deletion.tombstones.set('s', DELETED_AT);

      expect(await prune('s')).toBe('done');

      expect(journalOnly('s')).toEqual([s[2].content]);
      expect(held('s')).toEqual([s[3].id]);
      expect(owed('s')).toEqual([s[2].id, s[3].id]);
    });

    it('drops everything held when all of it was accepted before the deletion', async () => {
      const s = [1, 2].map((sequence) => messageRecord('s', sequence));
      await hold(s);
      deletion.tombstones.set('s', DELETED_AT);

      expect(await prune('s')).toBe('done');

      expect(held('s')).toEqual([]);
      expect(owed('s')).toEqual([]);
    });

    it('drops only the leading entries: one after a kept entry stays, even if accepted earlier', async () => {
      // The clock stepped back between two acceptances: order in the backlog is what counts.
      const early = messageRecord('s', 1);
      const late = messageRecord('s', 5);
      const stepBack = messageRecord('s', 6, { acceptedAt: ACCEPTED_AT + 2 });
      await hold([early, late, stepBack]);
      deletion.tombstones.set('s', DELETED_AT);

      expect(await prune('s')).toBe('done');

      expect(held('s')).toEqual([late.id, stepBack.id]);
      expect(owed('s')).toEqual([late.id, stepBack.id]);
    });

    it('answers true with nothing held, having the journal forget up to the deletion', async () => {
      deletion.tombstones.set('s', DELETED_AT);

      expect(await prune('s')).toBe('done');

      expect(spool.forgetCalls).toEqual([{ sessionId: 's', acceptedUpTo: DELETED_AT }]);
    });

    const dropped = async () =>
      (await metrics.messagesDroppedByDeletion.get()).values.reduce(
        (sum, value) => sum + value.value,
        0,
      );
    const iso = (epochMs: number) => new Date(epochMs).toISOString();

    it('logs one WARN and counts what it drops, from memory and from the journal', async () => {
      // s-0 on disk only, s-1 in memory: both accepted before the deletion; s-3 after it.
      const s = [0, 1, 3].map((sequence) => messageRecord('s', sequence));
      await onJournalOnly([s[0]]);
      await hold([s[1], s[2]]);
      deletion.tombstones.set('s', DELETED_AT);

      expect(await prune('s')).toBe('done');

      expect(await dropped()).toBe(2);
      expect(eraserLines('warn')).toEqual([
        `Dropped 2 accepted message(s) of session s at write-back: accepted at or before its deletion at ${iso(DELETED_AT)} (the newest at ${iso(s[1].acceptedAt)}), they are not stored`,
      ]);
    });

    it('names the newest dropped from the journal when memory held none of them', async () => {
      const s = [0, 1, 3].map((sequence) => messageRecord('s', sequence));
      await onJournalOnly([s[0], s[1]]);
      await hold([s[2]]);
      deletion.tombstones.set('s', DELETED_AT);

      await prune('s');

      expect(await dropped()).toBe(2);
      expect(eraserLines('warn')).toEqual([
        expect.stringContaining(`(the newest at ${iso(s[1].acceptedAt)})`),
      ]);
    });

    it('names the newest dropped from memory, past an older one', async () => {
      const s = [0, 1].map((sequence) => messageRecord('s', sequence));
      await hold(s);
      deletion.tombstones.set('s', DELETED_AT);

      await prune('s');

      expect(await dropped()).toBe(2);
      expect(eraserLines('warn')).toEqual([
        expect.stringContaining(`(the newest at ${iso(s[1].acceptedAt)})`),
      ]);
    });

    it('adds up across prunes', async () => {
      deletion.tombstones.set('s', DELETED_AT);
      await hold([messageRecord('s', 1)]);
      await prune('s');
      await hold([messageRecord('s', 2)]);
      await prune('s');

      expect(await dropped()).toBe(2);
      expect(eraserLines('warn')).toHaveLength(2);
    });

    it('logs nothing and counts nothing when it drops nothing', async () => {
      await hold([messageRecord('s', 3)]);
      await hold([messageRecord('t', 1)]);
      deletion.tombstones.set('s', DELETED_AT);

      await prune('s');
      await prune('t');

      expect(await dropped()).toBe(0);
      expect(eraserLines('warn')).toEqual([]);
    });
  });
  describe('the clock', () => {
    const prune = (sessionId: string) =>
      backlog.withSession(sessionId, (backlog) => sut.prune(backlog));

    it('stamps the tombstone from the instance clock, after every key it issued', async () => {
      clock.floor(NOW + 5_000);

      await sut.erase('s');

      expect(deletion.deletes).toEqual([{ sessionId: 's', at: NOW + 5_001 }]);
      expect(clock.next().ms).toBe(NOW + 5_002);
    });

    it('moves the clock past a tombstone it reads at write-back', async () => {
      deletion.tombstones.set('s', NOW + 9_000);

      expect(await prune('s')).toBe('done');

      expect(clock.next().ms).toBe(NOW + 9_001);
    });

    it('leaves the clock alone for a session never deleted', async () => {
      expect(await prune('s')).toBe('done');

      expect(clock.next().ms).toBe(NOW);
    });

    it("moves the clock past another instance's tombstone when told of the deletion", async () => {
      deletion.tombstones.set('s', NOW + 7_000);

      await sut.onSessionDeleted(new SessionDeleted('s'));

      expect(deletion.lookups).toEqual(['s']);
      expect(clock.next().ms).toBe(NOW + 7_001);
    });

    it('still drops what it holds when the tombstone cannot be read', async () => {
      deletion.lookupFailure = new Error('connection refused');

      await sut.onSessionDeleted(new SessionDeleted('s'));

      expect(clock.next().ms).toBe(NOW);
      expect(logger.messages('warn')).toEqual([]);
    });
  });
});
