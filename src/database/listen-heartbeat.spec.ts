import { jest } from '@jest/globals';
import { deferred, type Deferred } from '../common/testing/deferred.js';
import { ListenHeartbeat } from './listen-heartbeat.js';

const INTERVAL = 1000;
const DEADLINE = 3500;

// The real one, for the test's own turns of the loop, whatever a test does to the global.
const realSetImmediate = setImmediate;

describe(ListenHeartbeat.name, () => {
  let sends: { payload: string; done: Deferred<unknown> }[];
  let deafness: string[];
  let sut: ListenHeartbeat;

  beforeEach(() => {
    jest.useFakeTimers({ doNotFake: ['nextTick', 'queueMicrotask', 'setImmediate'] });
    sends = [];
    deafness = [];
    sut = new ListenHeartbeat(
      { intervalMs: INTERVAL, deadlineMs: DEADLINE },
      (payload) => {
        const done = deferred<unknown>();
        sends.push({ payload, done });
        return done.promise;
      },
      (reason) => deafness.push(reason),
    );
  });

  afterEach(() => {
    sut.stop();
    jest.restoreAllMocks();
    jest.useRealTimers();
  });

  /**
   * Lets `ms` pass, 100 at a time, with a turn of the real event loop after each: a deadline
   * that fired looks again in a real setImmediate (Jest's fake ones do not run as time
   * passes), so it ends within 100 ms of fake time, before the next beat.
   */
  async function advance(ms: number): Promise<void> {
    let left = ms;
    do {
      const step = Math.min(100, left);
      await jest.advanceTimersByTimeAsync(step);
      await new Promise((resolve) => realSetImmediate(resolve));
      left -= step;
    } while (left > 0);
  }

  /** Lets `ms` pass in steps of 500, settling each new send with `settle` as soon as it is made. */
  async function settleEvery(
    ms: number,
    settle: (send: { payload: string; done: Deferred<unknown> }) => void,
  ): Promise<void> {
    let settled = sends.length;
    for (let elapsed = 0; elapsed < ms; elapsed += 500) {
      await advance(500);
      for (; settled < sends.length; settled++) settle(sends[settled]);
      await advance(0);
    }
  }

  /** Answers every send so far, as a database that took the notice would. */
  async function answerAll(): Promise<void> {
    for (const send of sends) send.done.resolve(undefined);
    await advance(0);
  }

  it('sends nothing and watches nothing before start()', async () => {
    await advance(10 * DEADLINE);

    expect(sends).toEqual([]);
    expect(deafness).toEqual([]);
    expect(sut.watching).toBe(false);
  });

  it('sends a numbered notice every interval once started', async () => {
    sut.start();
    expect(sut.watching).toBe(true);

    await advance(INTERVAL - 1);
    expect(sends).toHaveLength(0);
    await advance(1);
    expect(sends.map((send) => send.payload)).toEqual(['1']);
    await answerAll();
    await advance(INTERVAL);
    expect(sends.map((send) => send.payload)).toEqual(['1', '2']);
  });

  it('stays quiet while every notice comes back in time', async () => {
    sut.start();
    for (let beat = 0; beat < 20; beat++) {
      await advance(INTERVAL);
      await answerAll();
      sut.heard();
    }

    expect(deafness).toEqual([]);
    expect(sends).toHaveLength(20);
    expect(sut.watching).toBe(true);
  });

  it('counts the deadline from start(): deaf at exactly the deadline when nothing is heard', async () => {
    sut.start();
    await advance(DEADLINE - 1);
    await answerAll();
    expect(deafness).toEqual([]);

    await advance(1);
    expect(deafness).toEqual(['no heartbeat heard within 3500 ms']);
    expect(sut.watching).toBe(false);
  });

  describe('after a stall of the whole process', () => {
    let looks: (() => void)[];

    /** Holds the look that a fired deadline takes once the loop has read its sockets. */
    function holdLooks(): void {
      looks = [];
      jest.spyOn(global, 'setImmediate').mockImplementation(((look: () => void) => {
        looks.push(look);
      }) as unknown as typeof setImmediate);
    }

    it('takes a notice read in the turn its deadline fired for one in time', async () => {
      sut.start();
      holdLooks();
      await advance(DEADLINE);
      expect(looks).toHaveLength(1);
      expect(deafness).toEqual([]);

      sut.heard();
      looks[0]();
      expect(deafness).toEqual([]);
      expect(sut.watching).toBe(true);

      jest.mocked(setImmediate).mockRestore();
      await advance(DEADLINE);
      expect(deafness).toHaveLength(1);
    });

    it('is deaf when the turn brought no notice', async () => {
      sut.start();
      holdLooks();
      await advance(DEADLINE);
      expect(deafness).toEqual([]);

      looks[0]();
      expect(deafness).toEqual([
        'no heartbeat heard within 3500 ms; the last one is still being sent',
      ]);
      expect(sut.watching).toBe(false);
    });

    it('ignores the look of a watch stopped meanwhile', async () => {
      sut.start();
      holdLooks();
      await advance(DEADLINE);
      sut.stop();

      looks[0]();
      expect(deafness).toEqual([]);
    });
  });

  it('counts the deadline from the last notice heard, not from the last sent', async () => {
    sut.start();
    await advance(2000);
    await answerAll();
    sut.heard();
    await advance(DEADLINE - 1);
    await answerAll();
    expect(deafness).toEqual([]);

    await advance(1);
    expect(deafness).toHaveLength(1);
  });

  it('is deaf once, sends no more, and takes a late notice for nothing', async () => {
    sut.start();
    for (let elapsed = 0; elapsed < DEADLINE; elapsed += 500) {
      await advance(500);
      await answerAll();
    }
    const sent = sends.length;
    expect(sent).toBe(3);
    expect(deafness).toHaveLength(1);

    sut.heard();
    await advance(10 * DEADLINE);
    expect(deafness).toHaveLength(1);
    expect(sends).toHaveLength(sent);
    expect(sut.watching).toBe(false);
  });

  it('says why the last notice could not be sent', async () => {
    sut.start();
    await settleEvery(DEADLINE, (send) =>
      send.done.reject(Object.assign(new Error('connect timed out'), { code: 'ETIMEDOUT' })),
    );

    expect(sends).toHaveLength(3);
    expect(deafness).toEqual([
      'no heartbeat heard within 3500 ms; the last one could not be sent: ETIMEDOUT: connect timed out',
    ]);
  });

  it('says so when the last notice is still being sent', async () => {
    sut.start();
    await advance(INTERVAL);
    sends[0].done.reject(new Error('connection reset'));
    await advance(DEADLINE - INTERVAL);

    expect(sends).toHaveLength(2);
    expect(deafness).toEqual([
      'no heartbeat heard within 3500 ms; the last one is still being sent',
    ]);
  });

  it('forgets a failed send once a later one goes through', async () => {
    sut.start();
    await advance(INTERVAL);
    sends[0].done.reject(new Error('connection reset'));
    await settleEvery(DEADLINE - INTERVAL, (send) => send.done.resolve(undefined));

    expect(sends).toHaveLength(3);
    expect(deafness).toEqual(['no heartbeat heard within 3500 ms']);
  });

  it('sends one notice at a time: a hanging send holds the next ones back', async () => {
    sut.start();
    await advance(3 * INTERVAL);
    expect(sends.map((send) => send.payload)).toEqual(['1']);

    sends[0].done.reject(new Error('query read timeout'));
    await advance(0);
    sut.heard();
    await advance(INTERVAL);
    expect(sends.map((send) => send.payload)).toEqual(['1', '2']);
  });

  it('watches afresh after start(), forgetting the failure of the watch before', async () => {
    sut.start();
    await settleEvery(DEADLINE, (send) => send.done.reject(new Error('gone')));
    expect(deafness).toHaveLength(1);

    sut.start();
    expect(sut.watching).toBe(true);
    await settleEvery(DEADLINE - 500, (send) => send.done.resolve(undefined));
    expect(deafness).toHaveLength(1);
    await settleEvery(500, (send) => send.done.resolve(undefined));
    expect(deafness).toEqual([
      'no heartbeat heard within 3500 ms; the last one could not be sent: gone',
      'no heartbeat heard within 3500 ms',
    ]);
    expect(sends.map((send) => send.payload)).toEqual(['1', '2', '3', '4', '5', '6']);
  });

  it('start() twice keeps one set of timers', async () => {
    sut.start();
    sut.start();
    await advance(INTERVAL);
    await answerAll();
    await advance(INTERVAL);

    expect(sends).toHaveLength(2);
  });

  it('stop() ends the watch: no more sends, never deaf', async () => {
    sut.start();
    await advance(INTERVAL);
    await answerAll();
    sut.stop();
    expect(sut.watching).toBe(false);
    sut.heard();
    expect(sut.watching).toBe(false);
    await advance(10 * DEADLINE);

    expect(sends).toHaveLength(1);
    expect(deafness).toEqual([]);
  });

  it('keeps neither timer from letting the process exit', () => {
    const unrefs: unknown[] = [];
    const setInterval = jest.spyOn(global, 'setInterval');
    const setTimeout = jest.spyOn(global, 'setTimeout');
    sut.start();
    for (const spy of [setInterval, setTimeout]) {
      const timer = spy.mock.results.at(-1)?.value as NodeJS.Timeout;
      unrefs.push(timer.hasRef());
    }

    expect(unrefs).toEqual([false, false]);
  });
});
