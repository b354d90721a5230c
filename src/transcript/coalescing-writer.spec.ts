import { deferred, type Deferred } from '../common/testing/deferred.js';
import { MessageStore, type SessionWrite, type WrittenSession } from '../database/message-store.js';
import { type MessageRecord } from '../message/message-record.js';
import { MessageRole } from '../message/message-role.js';
import { type WriteAttempt } from '../message/outcomes.js';
import { CoalescingWriter, MAX_RECORDS_PER_TRANSACTION } from './coalescing-writer.js';

function record(sessionId: string, index: number): MessageRecord {
  return {
    id: `${sessionId}-${index}`,
    sessionId,
    orderKey: String(index).padStart(8, '0'),
    role: MessageRole.USER,
    content: `message ${index}`,
    clientMessageId: null,
    toolName: null,
    toolCallId: null,
    toolCalls: null,
    metadata: null,
    acceptedAt: index,
  };
}

/** A write of `count` records to the session named `sessionId`. */
function write(sessionId: string, count = 1): SessionWrite {
  return { sessionId, records: Array.from({ length: count }, (_, i) => record(sessionId, i)) };
}

/** What the database reports when it refuses rows (a constraint, a bad value). */
class Refusal extends Error {}

const classify = (error: unknown) => (error instanceof Refusal ? 'refused' : 'unavailable');
const describe_ = (error: unknown) => `described: ${(error as Error).message}`;

const HEARTBEAT = 'heartbeat';
const MAX = MAX_RECORDS_PER_TRANSACTION;

/**
 * A store that records every call (a write's SessionWrite list, or HEARTBEAT) and counts how
 * many run at once. Calls can be held until the test opens them, and failed: `holdNextCall` and
 * `failNextCall` apply to the next call to arrive. Besides, a transaction that holds a record
 * whose id is in `refusing` is refused as a whole, and a record whose id is in `stored` is
 * skipped. It has `connections` write connections (concurrentWrites).
 */
class FakeMessageStore extends MessageStore {
  connections = 1;
  readonly calls: (SessionWrite[] | typeof HEARTBEAT)[] = [];
  readonly refusing = new Set<string>();
  readonly stored = new Set<string>();
  private readonly revisions = new Map<string, number>();
  active = 0;
  peak = 0;
  private readonly holds: Deferred[] = [];
  private readonly failures: unknown[] = [];
  private readonly failuresByCall = new Map<number, unknown>();
  private waiters: { count: number; gate: Deferred }[] = [];

  override get concurrentWrites(): number {
    return this.connections;
  }

  holdNextCall(): Deferred {
    const gate = deferred();
    this.holds.push(gate);
    return gate;
  }

  failNextCall(error: unknown): void {
    this.failures.push(error);
  }

  /** Resolves once the store has received `count` calls (a barrier, not a sleep). */
  callsReceived(count: number): Promise<void> {
    const gate = deferred();
    this.waiters.push({ count, gate });
    this.wake();
    return gate.promise;
  }

  /** Fails the call numbered `call` (1 for the first call this store gets). */
  failCall(call: number, error: unknown): void {
    this.failuresByCall.set(call, error);
  }

  async write(writes: SessionWrite[]): Promise<WrittenSession[]> {
    this.calls.push([...writes]);
    await this.run();
    const refused = writes.flatMap((one) => one.records).find((r) => this.refusing.has(r.id));
    if (refused) throw new Refusal(`refused ${refused.id}`);
    return writes.map((one) => {
      const inserted = one.records.filter((r) => !this.stored.has(r.id));
      const revision = (this.revisions.get(one.sessionId) ?? 0) + inserted.length;
      this.revisions.set(one.sessionId, revision);
      const skipped = one.records.filter((r) => this.stored.has(r.id));
      return { inserted, skipped, revision: inserted.length > 0 ? revision : null };
    });
  }

  async heartbeat(): Promise<void> {
    this.calls.push(HEARTBEAT);
    await this.run();
  }

  /** The session ids of each call, HEARTBEAT for a heartbeat. */
  get shape(): (string[] | typeof HEARTBEAT)[] {
    return this.calls.map((call) =>
      call === HEARTBEAT ? HEARTBEAT : call.map((one) => one.sessionId),
    );
  }

  /** The record ids of each write call. */
  get recordShape(): string[][] {
    return this.calls.flatMap((call) =>
      call === HEARTBEAT ? [] : [call.flatMap((one) => one.records.map((r) => r.id))],
    );
  }

  private wake(): void {
    const ready = this.waiters.filter((waiter) => this.calls.length >= waiter.count);
    this.waiters = this.waiters.filter((waiter) => !ready.includes(waiter));
    for (const waiter of ready) waiter.gate.resolve();
  }

  private async run(): Promise<void> {
    this.wake();
    const hold = this.holds.shift();
    const failure = this.failuresByCall.has(this.calls.length)
      ? { error: this.failuresByCall.get(this.calls.length) }
      : this.failures.length > 0
        ? { error: this.failures.shift() }
        : undefined;
    this.active += 1;
    this.peak = Math.max(this.peak, this.active);
    try {
      if (hold) await hold.promise;
      if (failure) throw failure.error;
    } finally {
      this.active -= 1;
    }
  }
}

/** What a heartbeat that committed answers: a write of nothing. */
const BEAT = { kind: 'written', inserted: [], skipped: [], refused: [], revision: null };

/** The kind of an attempt, or 'unavailable: <message>' / 'refused: <reason>'. */
function kindOf(attempt: WriteAttempt): string {
  if (attempt.kind === 'unavailable') return `unavailable: ${(attempt.error as Error).message}`;
  if (attempt.kind === 'refused') return `refused: ${attempt.reason}`;
  return 'written';
}

describe(CoalescingWriter.name, () => {
  let store: FakeMessageStore;
  let sut: CoalescingWriter;

  beforeEach(() => {
    store = new FakeMessageStore();
    sut = new CoalescingWriter(store, classify, describe_);
  });

  it('stores a lone write in a transaction of its own right away', async () => {
    const only = write('only');

    await sut.submit(only);

    expect(store.calls).toEqual([[only]]);
  });

  it('stores the writes submitted while a transaction runs together in the next one', async () => {
    const gate = store.holdNextCall();
    const first = write('first');
    const [a, b, c] = [write('a'), write('b'), write('c')];

    const settled = [sut.submit(first), sut.submit(a), sut.submit(b), sut.submit(c)];
    expect(store.calls).toEqual([[first]]);
    gate.resolve();
    await Promise.all(settled);

    expect(store.calls).toEqual([[first], [a, b, c]]);
    expect(store.calls[1][0]).toBe(a);
  });

  it('keeps submission order within a group', async () => {
    const gate = store.holdNextCall();
    const settled = ['first', 'zulu', 'alpha', 'mike', 'bravo'].map((id) => sut.submit(write(id)));
    gate.resolve();
    await Promise.all(settled);

    expect(store.shape).toEqual([['first'], ['zulu', 'alpha', 'mike', 'bravo']]);
  });

  it('resolves each submission only once its transaction has committed', async () => {
    const firstGate = store.holdNextCall();
    const secondGate = store.holdNextCall();
    const resolved: string[] = [];
    const settled = ['first', 'a', 'b'].map((id) =>
      sut.submit(write(id)).then(() => resolved.push(id)),
    );

    firstGate.resolve();
    await settled[0];
    expect(resolved).toEqual(['first']);
    expect(store.active).toBe(1);

    secondGate.resolve();
    await Promise.all(settled);
    expect(resolved).toEqual(['first', 'a', 'b']);
  });

  describe('group size', () => {
    it(`puts writes in separate transactions when together they exceed ${MAX} records`, async () => {
      const gate = store.holdNextCall();
      const settled = [
        sut.submit(write('held')),
        sut.submit(write('big', MAX - 500)),
        sut.submit(write('bigger', 1000)),
      ];
      gate.resolve();
      await Promise.all(settled);

      expect(store.shape).toEqual([['held'], ['big'], ['bigger']]);
      expect(store.recordShape.map((ids) => ids.length)).toEqual([1, MAX - 500, 1000]);
    });

    it(`fills a transaction up to exactly ${MAX} records`, async () => {
      const gate = store.holdNextCall();
      const settled = [
        sut.submit(write('held')),
        sut.submit(write('a', MAX - 1000)),
        sut.submit(write('b', 999)),
        sut.submit(write('c', 1)),
        sut.submit(write('d', 1)),
      ];
      gate.resolve();
      await Promise.all(settled);

      expect(store.shape).toEqual([['held'], ['a', 'b', 'c'], ['d']]);
    });

    it(`still stores a single write of more than ${MAX} records, alone`, async () => {
      const gate = store.holdNextCall();
      const settled = [
        sut.submit(write('held')),
        sut.submit(write('huge', MAX + 500)),
        sut.submit(write('small')),
      ];
      gate.resolve();
      await Promise.all(settled);

      expect(store.shape).toEqual([['held'], ['huge'], ['small']]);
    });
  });

  it('answers each write with what the store inserted and skipped, and the revision', async () => {
    store.stored.add('replay-0');

    const attempt = await sut.submit(write('replay', 2));

    expect(attempt).toEqual({
      kind: 'written',
      inserted: [record('replay', 1)],
      skipped: [record('replay', 0)],
      refused: [],
      revision: 1,
    });
  });

  describe('heartbeats', () => {
    it('commits a heartbeat through the store when nothing else is waiting', async () => {
      await expect(sut.heartbeat()).resolves.toEqual(BEAT);

      expect(store.calls).toEqual([HEARTBEAT]);
    });

    it('runs a heartbeat alone, in submission order, never grouped with writes', async () => {
      const gate = store.holdNextCall();
      const done: string[] = [];
      const track = (name: string, promise: Promise<unknown>) =>
        promise.then(() => done.push(name));
      const settled = [
        track('first', sut.submit(write('first'))),
        track('a', sut.submit(write('a'))),
        track('beat 1', sut.heartbeat()),
        track('beat 2', sut.heartbeat()),
        track('b', sut.submit(write('b'))),
        track('c', sut.submit(write('c'))),
        track('beat 3', sut.heartbeat()),
      ];
      gate.resolve();
      await Promise.all(settled);

      expect(store.shape).toEqual([['first'], ['a'], HEARTBEAT, HEARTBEAT, ['b', 'c'], HEARTBEAT]);
      expect(done).toEqual(['first', 'a', 'beat 1', 'beat 2', 'b', 'c', 'beat 3']);
    });

    it('answers a failed heartbeat, and the writes queued behind it, unavailable with its error', async () => {
      const gate = store.holdNextCall();
      const locked = new Error('database is locked');
      const held = sut.submit(write('held'));
      store.failNextCall(locked);
      const beat = sut.heartbeat();
      const behind = sut.submit(write('behind'));
      gate.resolve();

      expect(await beat).toEqual({ kind: 'unavailable', error: locked });
      expect(kindOf(await held)).toBe('written');
      expect(kindOf(await behind)).toBe('unavailable: database is locked');
      expect(kindOf(await sut.submit(write('later')))).toBe('written');
      expect(store.shape).toEqual([['held'], HEARTBEAT, ['later']]);
    });
  });

  describe('refusals', () => {
    it('retries each write of a group alone after a refusal, so only the refused one fails, with its reason', async () => {
      const gate = store.holdNextCall();
      store.refusing.add('bad-0');
      const held = sut.submit(write('held'));
      const attempts = ['good-1', 'bad', 'good-2'].map((id) => sut.submit(write(id)));
      gate.resolve();
      await held;

      const [good1, bad, good2] = await Promise.all(attempts);
      expect(kindOf(good1)).toBe('written');
      expect(kindOf(good2)).toBe('written');
      expect(bad).toEqual({ kind: 'refused', reason: 'described: refused bad-0' });
      expect(store.shape).toEqual([
        ['held'],
        ['good-1', 'bad', 'good-2'],
        ['good-1'],
        ['bad'],
        ['good-2'],
      ]);
    });

    it('does not try a write again that was refused alone', async () => {
      store.refusing.add('bad-0');

      expect(kindOf(await sut.submit(write('bad')))).toBe('refused: described: refused bad-0');
      expect(store.shape).toEqual([['bad']]);
    });

    it('refuses a whole write without isolating, storing none of it', async () => {
      store.refusing.add('batch-2');

      const attempt = await sut.submit(write('batch', 4));

      expect(attempt).toEqual({ kind: 'refused', reason: 'described: refused batch-2' });
      expect(store.recordShape).toEqual([['batch-0', 'batch-1', 'batch-2', 'batch-3']]);
    });

    it('with isolateRefusals halves a refused write until the refused records stand alone, storing the rest in order', async () => {
      store.refusing.add('replay-2');
      store.refusing.add('replay-4');

      const attempt = await sut.submit(write('replay', 5), { isolateRefusals: true });

      expect(attempt).toEqual({
        kind: 'written',
        inserted: [record('replay', 0), record('replay', 1), record('replay', 3)],
        skipped: [],
        refused: [
          { record: record('replay', 2), reason: 'described: refused replay-2' },
          { record: record('replay', 4), reason: 'described: refused replay-4' },
        ],
        revision: 3,
      });
      expect(store.recordShape).toEqual([
        ['replay-0', 'replay-1', 'replay-2', 'replay-3', 'replay-4'],
        ['replay-0', 'replay-1', 'replay-2'],
        ['replay-0', 'replay-1'],
        ['replay-2'],
        ['replay-3', 'replay-4'],
        ['replay-3'],
        ['replay-4'],
      ]);
    });

    it('keeps the skipped records and the last revision when isolating', async () => {
      store.refusing.add('replay-1');
      store.stored.add('replay-0');

      const attempt = await sut.submit(write('replay', 3), { isolateRefusals: true });

      expect(attempt).toMatchObject({
        kind: 'written',
        inserted: [record('replay', 2)],
        skipped: [record('replay', 0)],
        refused: [{ record: record('replay', 1) }],
        revision: 1,
      });
    });

    it('stops isolating at an outage: the right half is never tried once the left could not be written', async () => {
      const down = new Error('connection refused');
      store.refusing.add('replay-3');
      const failing = store.holdNextCall();
      const attempt = sut.submit(write('replay', 4), { isolateRefusals: true });
      failing.resolve();
      await Promise.resolve();
      store.failNextCall(down);

      expect(kindOf(await attempt)).toBe('unavailable: connection refused');
      expect(store.recordShape).toEqual([
        ['replay-0', 'replay-1', 'replay-2', 'replay-3'],
        ['replay-0', 'replay-1'],
      ]);
    });

    it('fails the rest of a group and what waits behind it once a retry alone finds the database down', async () => {
      const gate = store.holdNextCall();
      const down = new Error('connection refused');
      store.refusing.add('bad-0');
      const held = sut.submit(write('held'));
      const attempts = ['bad', 'good', 'other'].map((id) => sut.submit(write(id)));
      // Call 2 is the group, refused; 3 is bad alone (refused again); 4 is good alone: down.
      store.failCall(4, down);
      const groupHeld = store.holdNextCall();
      gate.resolve();
      await held;
      await store.callsReceived(2);
      const behind = sut.submit(write('behind'));
      groupHeld.resolve();

      const [bad, good, other] = await Promise.all(attempts);

      expect(kindOf(bad)).toBe('refused: described: refused bad-0');
      expect(kindOf(good)).toBe('unavailable: connection refused');
      expect(kindOf(other)).toBe('unavailable: connection refused');
      expect(kindOf(await behind)).toBe('unavailable: connection refused');
      expect(store.shape).toEqual([['held'], ['bad', 'good', 'other'], ['bad'], ['good']]);
    });
  });

  describe('failures', () => {
    it('answers every write of a group unavailable on an outage, without retrying them one by one', async () => {
      const gate = store.holdNextCall();
      const down = new Error('connection refused');
      const classified: unknown[] = [];
      sut = new CoalescingWriter(
        store,
        (error) => {
          classified.push(error);
          return classify(error);
        },
        describe_,
      );
      const held = sut.submit(write('held'));
      store.failNextCall(down);
      const attempts = ['a', 'b', 'c'].map((id) => sut.submit(write(id)));
      gate.resolve();
      await held;

      expect(await Promise.all(attempts)).toEqual([
        { kind: 'unavailable', error: down },
        { kind: 'unavailable', error: down },
        { kind: 'unavailable', error: down },
      ]);
      expect(store.shape).toEqual([['held'], ['a', 'b', 'c']]);
      expect(classified).toEqual([down]);
    });

    it('keeps serving later submissions after a transaction failed', async () => {
      const down = new Error('connection refused');
      store.failNextCall(down);

      expect(kindOf(await sut.submit(write('lost')))).toBe('unavailable: connection refused');
      expect(kindOf(await sut.submit(write('next')))).toBe('written');
      await expect(sut.heartbeat()).resolves.toEqual(BEAT);

      expect(store.shape).toEqual([['lost'], ['next'], HEARTBEAT]);
    });

    it('fails the writes that queued up behind a failed group at once, without trying them', async () => {
      const gates = [store.holdNextCall(), store.holdNextCall()];
      const down = new Error('connection refused');
      const held = sut.submit(write('held'));
      store.failNextCall(down);
      const failing = ['a', 'b'].map((id) => sut.submit(write(id)));
      gates[0].resolve();
      await held;
      await store.callsReceived(2);
      // The group [a, b] is now in its (failing) transaction; these queue up behind it.
      const behind = ['x', 'y'].map((id) => sut.submit(write(id)));
      gates[1].resolve();

      const unavailable = { kind: 'unavailable', error: down };
      expect(await Promise.all(failing)).toEqual([unavailable, unavailable]);
      // They would only wait out the same failure again; their callers journal them instead.
      expect(await Promise.all(behind)).toEqual([unavailable, unavailable]);
      expect(store.shape).toEqual([['held'], ['a', 'b']]);
      expect(kindOf(await sut.submit(write('later')))).toBe('written');
      expect(store.shape).toEqual([['held'], ['a', 'b'], ['later']]);
    });
  });

  it('never runs two transactions at once on a store of one connection', async () => {
    const gates = [store.holdNextCall(), store.holdNextCall(), store.holdNextCall()];
    store.refusing.add('bad-0');
    const settled: Promise<unknown>[] = [
      sut.submit(write('first')),
      sut.submit(write('a')),
      sut.heartbeat(),
    ];
    gates[0].resolve();
    await settled[0];
    settled.push(sut.submit(write('b')), sut.submit(write('bad')));
    gates[1].resolve();
    await settled[1];
    settled.push(sut.submit(write('c')));
    gates[2].resolve();
    await Promise.all(settled);
    // A second wave after the writer went idle.
    await Promise.all([sut.submit(write('d')), sut.submit(write('e')), sut.heartbeat()]);

    expect(store.peak).toBe(1);
    expect(store.shape).toEqual([
      ['first'],
      ['a'],
      HEARTBEAT,
      ['b', 'bad', 'c'],
      ['b'],
      ['bad'],
      ['c'],
      ['d'],
      ['e'],
      HEARTBEAT,
    ]);
  });

  describe('on a store of two connections', () => {
    beforeEach(() => {
      store.connections = 2;
    });

    it('starts a write submitted while a transaction runs in a transaction of its own at once', async () => {
      const gates = [store.holdNextCall(), store.holdNextCall(), store.holdNextCall()];
      const first = sut.submit(write('first'));
      const second = sut.submit(write('second'));

      expect(store.shape).toEqual([['first'], ['second']]);
      expect(store.active).toBe(2);
      const behind = ['a', 'b'].map((id) => sut.submit(write(id)));
      expect(store.shape).toEqual([['first'], ['second']]);

      gates[1].resolve();
      expect(kindOf(await second)).toBe('written');
      await store.callsReceived(3);
      expect(store.shape).toEqual([['first'], ['second'], ['a', 'b']]);
      gates[0].resolve();
      gates[2].resolve();
      await Promise.all([first, ...behind]);
      expect(store.peak).toBe(2);
    });

    it('never runs more transactions at once than the store has connections', async () => {
      const gates = Array.from({ length: 6 }, () => store.holdNextCall());
      const settled: Promise<unknown>[] = ['a', 'b', 'c', 'd', 'e', 'f'].map((id, index) =>
        index === 3 ? sut.heartbeat() : sut.submit(write(id)),
      );
      expect(store.calls).toHaveLength(2);
      for (const gate of gates) gate.resolve();
      await Promise.all(settled);

      expect(store.peak).toBe(2);
      expect(store.shape).toEqual([['a'], ['b'], ['c'], HEARTBEAT, ['e', 'f']]);
    });

    it("does not start a session's write while another write of that session is in a transaction", async () => {
      const gate = store.holdNextCall();
      const done: string[] = [];
      const first = sut.submit(write('same')).then(() => done.push('first'));
      const again = sut.submit(write('same', 2)).then(() => done.push('again'));
      const other = sut.submit(write('other')).then(() => done.push('other'));

      // A connection is free, but the head of the queue waits for its session, and the rest
      // wait in order behind it.
      expect(store.shape).toEqual([['same']]);
      gate.resolve();
      await Promise.all([first, again, other]);

      expect(store.shape).toEqual([['same'], ['same', 'other']]);
      expect(store.recordShape).toEqual([['same-0'], ['same-0', 'same-1', 'other-0']]);
      expect(done).toEqual(['first', 'again', 'other']);
    });

    it('runs a heartbeat on a free connection while a write is in a transaction', async () => {
      const gate = store.holdNextCall();
      const held = sut.submit(write('held'));

      await expect(sut.heartbeat()).resolves.toEqual(BEAT);
      expect(store.shape).toEqual([['held'], HEARTBEAT]);
      gate.resolve();
      expect(kindOf(await held)).toBe('written');
    });

    it('fails what waits behind a failed transaction, but not the one running beside it', async () => {
      const gates = [store.holdNextCall(), store.holdNextCall()];
      const down = new Error('connection refused');
      store.failNextCall(down);
      const failing = sut.submit(write('failing'));
      const beside = sut.submit(write('beside'));
      const behind = sut.submit(write('behind'));
      gates[0].resolve();

      expect(kindOf(await failing)).toBe('unavailable: connection refused');
      expect(kindOf(await behind)).toBe('unavailable: connection refused');
      gates[1].resolve();
      expect(kindOf(await beside)).toBe('written');
      expect(store.shape).toEqual([['failing'], ['beside']]);
    });
  });
});
