import { jest } from '@jest/globals';
import { deferred, type Deferred } from '../common/testing/deferred.js';
import { ListenHeartbeat } from './listen-heartbeat.js';

const INTERVAL = 1000;
const DEADLINE = 3500;

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
    jest.useRealTimers();
  });

  /** Lets `ms` pass in steps of 500, settling each new send with `settle` as soon as it is made. */
  async function settleEvery(
    ms: number,
    settle: (send: { payload: string; done: Deferred<unknown> }) => void,
  ): Promise<void> {
    let settled = sends.length;
    for (let elapsed = 0; elapsed < ms; elapsed += 500) {
      await jest.advanceTimersByTimeAsync(500);
      for (; settled < sends.length; settled++) settle(sends[settled]);
      await jest.advanceTimersByTimeAsync(0);
    }
  }

  /** Answers every send so far, as a database that took the notice would. */
  async function answerAll(): Promise<void> {
    for (const send of sends) send.done.resolve(undefined);
    await jest.advanceTimersByTimeAsync(0);
  }

  it('sends nothing and watches nothing before start()', async () => {
    await jest.advanceTimersByTimeAsync(10 * DEADLINE);

    expect(sends).toEqual([]);
    expect(deafness).toEqual([]);
    expect(sut.watching).toBe(false);
  });

  it('sends a numbered notice every interval once started', async () => {
    sut.start();
    expect(sut.watching).toBe(true);

    await jest.advanceTimersByTimeAsync(INTERVAL - 1);
    expect(sends).toHaveLength(0);
    await jest.advanceTimersByTimeAsync(1);
    expect(sends.map((send) => send.payload)).toEqual(['1']);
    await answerAll();
    await jest.advanceTimersByTimeAsync(INTERVAL);
    expect(sends.map((send) => send.payload)).toEqual(['1', '2']);
  });

  it('stays quiet while every notice comes back in time', async () => {
    sut.start();
    for (let beat = 0; beat < 20; beat++) {
      await jest.advanceTimersByTimeAsync(INTERVAL);
      await answerAll();
      sut.heard();
    }

    expect(deafness).toEqual([]);
    expect(sends).toHaveLength(20);
    expect(sut.watching).toBe(true);
  });

  it('counts the deadline from start(): deaf at exactly the deadline when nothing is heard', async () => {
    sut.start();
    await jest.advanceTimersByTimeAsync(DEADLINE - 1);
    await answerAll();
    expect(deafness).toEqual([]);

    await jest.advanceTimersByTimeAsync(1);
    expect(deafness).toEqual(['no heartbeat heard within 3500 ms']);
    expect(sut.watching).toBe(false);
  });

  it('counts the deadline from the last notice heard, not from the last sent', async () => {
    sut.start();
    await jest.advanceTimersByTimeAsync(2000);
    await answerAll();
    sut.heard();
    await jest.advanceTimersByTimeAsync(DEADLINE - 1);
    await answerAll();
    expect(deafness).toEqual([]);

    await jest.advanceTimersByTimeAsync(1);
    expect(deafness).toHaveLength(1);
  });

  it('is deaf once, sends no more, and takes a late notice for nothing', async () => {
    sut.start();
    for (let elapsed = 0; elapsed < DEADLINE; elapsed += 500) {
      await jest.advanceTimersByTimeAsync(500);
      await answerAll();
    }
    const sent = sends.length;
    expect(sent).toBe(3);
    expect(deafness).toHaveLength(1);

    sut.heard();
    await jest.advanceTimersByTimeAsync(10 * DEADLINE);
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
    await jest.advanceTimersByTimeAsync(INTERVAL);
    sends[0].done.reject(new Error('connection reset'));
    await jest.advanceTimersByTimeAsync(DEADLINE - INTERVAL);

    expect(sends).toHaveLength(2);
    expect(deafness).toEqual([
      'no heartbeat heard within 3500 ms; the last one is still being sent',
    ]);
  });

  it('forgets a failed send once a later one goes through', async () => {
    sut.start();
    await jest.advanceTimersByTimeAsync(INTERVAL);
    sends[0].done.reject(new Error('connection reset'));
    await settleEvery(DEADLINE - INTERVAL, (send) => send.done.resolve(undefined));

    expect(sends).toHaveLength(3);
    expect(deafness).toEqual(['no heartbeat heard within 3500 ms']);
  });

  it('sends one notice at a time: a hanging send holds the next ones back', async () => {
    sut.start();
    await jest.advanceTimersByTimeAsync(3 * INTERVAL);
    expect(sends.map((send) => send.payload)).toEqual(['1']);

    sends[0].done.reject(new Error('query read timeout'));
    await jest.advanceTimersByTimeAsync(0);
    sut.heard();
    await jest.advanceTimersByTimeAsync(INTERVAL);
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
    await jest.advanceTimersByTimeAsync(INTERVAL);
    await answerAll();
    await jest.advanceTimersByTimeAsync(INTERVAL);

    expect(sends).toHaveLength(2);
  });

  it('stop() ends the watch: no more sends, never deaf', async () => {
    sut.start();
    await jest.advanceTimersByTimeAsync(INTERVAL);
    await answerAll();
    sut.stop();
    expect(sut.watching).toBe(false);
    sut.heard();
    expect(sut.watching).toBe(false);
    await jest.advanceTimersByTimeAsync(10 * DEADLINE);

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
