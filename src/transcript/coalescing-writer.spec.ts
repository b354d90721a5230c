import { CoalescingWriter } from './coalescing-writer.js';
import { type MessageRecord } from '../message/message-record.js';
import { MessageRole } from '../message/message-role.js';
import { MessageStore, type SessionWrite, type WriteResult } from '../database/message-store.js';
import { deferred, type Deferred } from '../common/testing/deferred.js';

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

/** What the database reports when a write breaks a unique constraint. */
class ConstraintViolation extends Error {}

const isConstraintViolation = (error: unknown): boolean => error instanceof ConstraintViolation;

const PROBE = 'probe';

/**
 * A store that records every call (a write's SessionWrite list, or PROBE) and counts how many
 * run at once. Calls can be held until the test opens them, and failed: `holdNextCall` and
 * `failNextCall` apply to the next call to arrive. Besides, a transaction that contains a
 * session in `violating` breaks a constraint.
 */
class FakeMessageStore extends MessageStore {
  readonly calls: (SessionWrite[] | typeof PROBE)[] = [];
  readonly violating = new Set<string>();
  active = 0;
  peak = 0;
  private readonly holds: Deferred[] = [];
  private readonly failures: unknown[] = [];

  holdNextCall(): Deferred {
    const gate = deferred();
    this.holds.push(gate);
    return gate;
  }

  failNextCall(error: unknown): void {
    this.failures.push(error);
  }

  async write(writes: SessionWrite[]): Promise<WriteResult[]> {
    this.calls.push([...writes]);
    await this.run();
    if (writes.some((w) => this.violating.has(w.sessionId))) {
      throw new ConstraintViolation(`duplicate key in ${writes.map((w) => w.sessionId).join()}`);
    }
    return writes.map((write) => ({ stored: write.records, revision: write.records.length }));
  }

  async probeWrite(): Promise<void> {
    this.calls.push(PROBE);
    await this.run();
  }

  findByClientMessageIds(): Promise<MessageRecord[]> {
    return Promise.resolve([]);
  }

  /** The session ids of each call, PROBE for a probe. */
  get shape(): (string[] | typeof PROBE)[] {
    return this.calls.map((call) => (call === PROBE ? PROBE : call.map((w) => w.sessionId)));
  }

  private async run(): Promise<void> {
    const hold = this.holds.shift();
    const failure = this.failures.length > 0 ? { error: this.failures.shift() } : undefined;
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

/** Resolves with 'resolved' or the rejection reason, without leaving a rejection unhandled. */
function outcome(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => 'resolved',
    (error: unknown) => error,
  );
}

describe(CoalescingWriter.name, () => {
  let store: FakeMessageStore;
  let sut: CoalescingWriter;

  beforeEach(() => {
    store = new FakeMessageStore();
    sut = new CoalescingWriter(store, isConstraintViolation);
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
    it('puts writes in separate transactions when together they exceed 2000 records', async () => {
      const gate = store.holdNextCall();
      const settled = [
        sut.submit(write('held')),
        sut.submit(write('big', 1500)),
        sut.submit(write('bigger', 1000)),
      ];
      gate.resolve();
      await Promise.all(settled);

      expect(store.shape).toEqual([['held'], ['big'], ['bigger']]);
      expect(store.calls.map((call) => (call === PROBE ? 0 : call[0].records.length))).toEqual([
        1, 1500, 1000,
      ]);
    });

    it('fills a transaction up to exactly 2000 records', async () => {
      const gate = store.holdNextCall();
      const settled = [
        sut.submit(write('held')),
        sut.submit(write('a', 1000)),
        sut.submit(write('b', 999)),
        sut.submit(write('c', 1)),
        sut.submit(write('d', 1)),
      ];
      gate.resolve();
      await Promise.all(settled);

      expect(store.shape).toEqual([['held'], ['a', 'b', 'c'], ['d']]);
    });

    it('still stores a single write of more than 2000 records, alone', async () => {
      const gate = store.holdNextCall();
      const settled = [
        sut.submit(write('held')),
        sut.submit(write('huge', 2500)),
        sut.submit(write('small')),
      ];
      gate.resolve();
      await Promise.all(settled);

      expect(store.shape).toEqual([['held'], ['huge'], ['small']]);
    });
  });

  describe('probes', () => {
    it('runs a probe through store.probeWrite when nothing else is waiting', async () => {
      await sut.probe();

      expect(store.calls).toEqual([PROBE]);
    });

    it('runs a probe alone, in submission order, never grouped with writes', async () => {
      const gate = store.holdNextCall();
      const done: string[] = [];
      const track = (name: string, promise: Promise<unknown>) =>
        promise.then(() => done.push(name));
      const settled = [
        track('first', sut.submit(write('first'))),
        track('a', sut.submit(write('a'))),
        track('probe 1', sut.probe()),
        track('probe 2', sut.probe()),
        track('b', sut.submit(write('b'))),
        track('c', sut.submit(write('c'))),
        track('probe 3', sut.probe()),
      ];
      gate.resolve();
      await Promise.all(settled);

      expect(store.shape).toEqual([['first'], ['a'], PROBE, PROBE, ['b', 'c'], PROBE]);
      expect(done).toEqual(['first', 'a', 'probe 1', 'probe 2', 'b', 'c', 'probe 3']);
    });

    it('rejects a failed probe, and the writes queued behind it, with its error', async () => {
      const gate = store.holdNextCall();
      const locked = new Error('database is locked');
      const held = sut.submit(write('held'));
      store.failNextCall(locked);
      const probe = outcome(sut.probe());
      const behind = outcome(sut.submit(write('behind')));
      gate.resolve();

      expect(await probe).toBe(locked);
      await expect(held).resolves.toMatchObject({ revision: 1 });
      expect(await behind).toBe(locked);
      await expect(sut.submit(write('later'))).resolves.toMatchObject({ revision: 1 });
      expect(store.shape).toEqual([['held'], PROBE, ['later']]);
    });
  });

  describe('failures', () => {
    it('retries each write of a group alone after a constraint violation, so only the bad one fails', async () => {
      const gate = store.holdNextCall();
      store.violating.add('bad');
      const held = sut.submit(write('held'));
      const outcomes = ['good-1', 'bad', 'good-2'].map((id) => outcome(sut.submit(write(id))));
      gate.resolve();
      await held;

      const [good1, bad, good2] = await Promise.all(outcomes);
      expect(good1).toBe('resolved');
      expect(good2).toBe('resolved');
      expect(bad).toBeInstanceOf(ConstraintViolation);
      expect((bad as Error).message).toBe('duplicate key in bad');
      expect(store.shape).toEqual([
        ['held'],
        ['good-1', 'bad', 'good-2'],
        ['good-1'],
        ['bad'],
        ['good-2'],
      ]);
    });

    it('rejects every write of a group with any other error, without retrying them one by one', async () => {
      const gate = store.holdNextCall();
      const down = new Error('connection refused');
      const predicateSaw: unknown[] = [];
      sut = new CoalescingWriter(store, (error) => {
        predicateSaw.push(error);
        return isConstraintViolation(error);
      });
      const held = sut.submit(write('held'));
      store.failNextCall(down);
      const outcomes = ['a', 'b', 'c'].map((id) => outcome(sut.submit(write(id))));
      gate.resolve();
      await held;

      expect(await Promise.all(outcomes)).toEqual([down, down, down]);
      expect(store.shape).toEqual([['held'], ['a', 'b', 'c']]);
      expect(predicateSaw).toEqual([down]);
    });

    it('does not retry a write that failed alone with a constraint violation', async () => {
      store.violating.add('bad');

      const failure = await outcome(sut.submit(write('bad')));

      expect(failure).toBeInstanceOf(ConstraintViolation);
      expect(store.shape).toEqual([['bad']]);
    });

    it('keeps serving later submissions after a transaction failed', async () => {
      const down = new Error('connection refused');
      store.failNextCall(down);

      expect(await outcome(sut.submit(write('lost')))).toBe(down);
      await expect(sut.submit(write('next'))).resolves.toMatchObject({ revision: 1 });
      await expect(sut.probe()).resolves.toBeUndefined();

      expect(store.shape).toEqual([['lost'], ['next'], PROBE]);
    });

    it('fails the writes that queued up behind a failed group at once, without trying them', async () => {
      const gates = [store.holdNextCall(), store.holdNextCall()];
      const down = new Error('connection refused');
      const held = sut.submit(write('held'));
      store.failNextCall(down);
      const failing = ['a', 'b'].map((id) => outcome(sut.submit(write(id))));
      gates[0].resolve();
      await held;
      // The group [a, b] is now in its (failing) transaction; these queue up behind it.
      const behind = ['x', 'y'].map((id) => outcome(sut.submit(write(id))));
      gates[1].resolve();

      expect(await Promise.all(failing)).toEqual([down, down]);
      // They would only wait out the same failure again; their callers queue them instead.
      expect(await Promise.all(behind)).toEqual([down, down]);
      expect(store.shape).toEqual([['held'], ['a', 'b']]);
      await expect(sut.submit(write('later'))).resolves.toMatchObject({ revision: 1 });
      expect(store.shape).toEqual([['held'], ['a', 'b'], ['later']]);
    });
  });

  it('never runs two transactions at once', async () => {
    const gates = [store.holdNextCall(), store.holdNextCall(), store.holdNextCall()];
    store.violating.add('bad');
    const settled = [
      outcome(sut.submit(write('first'))),
      outcome(sut.submit(write('a'))),
      outcome(sut.probe()),
    ];
    gates[0].resolve();
    await settled[0];
    settled.push(outcome(sut.submit(write('b'))), outcome(sut.submit(write('bad'))));
    gates[1].resolve();
    await settled[1];
    settled.push(outcome(sut.submit(write('c'))));
    gates[2].resolve();
    await Promise.all(settled);
    // A second wave after the writer went idle.
    await Promise.all([sut.submit(write('d')), sut.submit(write('e')), sut.probe()]);

    expect(store.peak).toBe(1);
    expect(store.shape).toEqual([
      ['first'],
      ['a'],
      PROBE,
      ['b', 'bad', 'c'],
      ['b'],
      ['bad'],
      ['c'],
      ['d'],
      ['e'],
      PROBE,
    ]);
  });
});
