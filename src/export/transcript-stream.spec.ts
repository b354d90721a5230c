import { jest } from '@jest/globals';
import { EventEmitter } from 'node:events';
import { deferred, type Deferred } from '../common/testing/deferred.js';
import { type Session } from '../common/graphql/models/session.model.js';
import { type Page } from '../common/pagination/page-request.js';
import { acceptedRecord } from '../message/testing/message-record.fixture.js';
import { type MessageRecord } from '../message/message-record.js';
import { type TranscriptFormatter } from './transcript-formats.js';
import { TranscriptStream, type ExportSink } from './transcript-stream.js';

const DRAIN_TIMEOUT_MS = 30_000;

/** A response whose buffer the test fills and drains, and whose client it hangs up. */
class FakeResponse extends EventEmitter implements ExportSink {
  readonly written: string[] = [];
  destroyed = false;
  ended = false;
  /** Write answers false (the response holds more than it should) while full… */
  full = false;
  /** …and for the chunks written at these places (1 for the first). */
  readonly fullAt = new Set<number>();
  /** Whether end() is followed by 'finish' (false: the client stopped reading the end). */
  finishes = true;

  /** Called with each chunk as it is written. */
  onWrite: (chunk: string) => void = () => undefined;

  write(chunk: string): boolean {
    this.written.push(chunk);
    this.onWrite(chunk);
    return !this.full && !this.fullAt.has(this.written.length);
  }

  end(): void {
    this.ended = true;
    if (this.finishes) this.emit('finish');
  }

  destroy(): void {
    this.destroyed = true;
    this.emit('close');
  }

  /** The client goes away. */
  hangUp(): void {
    this.destroyed = true;
    this.emit('close');
  }

  drain(): void {
    this.full = false;
    this.emit('drain');
  }

  /** Resolves once the stream waits for `event`. */
  waitsFor(event: 'drain' | 'finish'): Promise<void> {
    if (this.listenerCount(event) > 0) return Promise.resolve();
    return new Promise((resolve) => {
      const added = (name: string | symbol) => {
        if (name !== event) return;
        this.off('newListener', added);
        resolve();
      };
      this.on('newListener', added);
    });
  }
}

function record(index: number): MessageRecord {
  return acceptedRecord('s', `message ${index}`, {
    id: `m${index}`,
    orderKey: String(index).padStart(6, '0'),
    acceptedAt: index,
  });
}

/** `count` messages in pages of `size`, read after an order key; each read can be held. */
class FakePages {
  readonly reads: string[] = [];
  private readonly held = new Map<number, Deferred>();
  private readonly failing = new Map<number, unknown>();
  private readonly arrived = new Map<number, Deferred>();

  constructor(
    private readonly count: number,
    private readonly size: number,
  ) {}

  first(): Page<MessageRecord> {
    return this.slice(0);
  }

  /** The `n`th read (1 for the first after `first`) waits until the test releases it. */
  hold(n: number): Deferred {
    const gate = deferred();
    this.held.set(n, gate);
    return gate;
  }

  failOn(n: number, error: unknown): void {
    this.failing.set(n, error);
  }

  /** Resolves once the `n`th read has been asked for. */
  asked(n: number): Promise<void> {
    if (this.reads.length >= n) return Promise.resolve();
    const gate = this.arrived.get(n) ?? deferred();
    this.arrived.set(n, gate);
    return gate.promise;
  }

  readonly next = async (after: string): Promise<Page<MessageRecord>> => {
    this.reads.push(after);
    const n = this.reads.length;
    this.arrived.get(n)?.resolve();
    await this.held.get(n)?.promise;
    if (this.failing.has(n)) throw this.failing.get(n);
    return this.slice(Number(after) + 1);
  };

  private slice(from: number): Page<MessageRecord> {
    const to = Math.min(this.count, from + this.size);
    const items = Array.from({ length: to - from }, (_, i) => record(from + i));
    return { items, hasNextPage: to < this.count, hasPreviousPage: from > 0 };
  }
}

// What was written, legibly: H the head, each message's id, T the tail.
const formatter: TranscriptFormatter = {
  head: () => 'H',
  message: (message) => message.id,
  tail: () => 'T',
};
const session = { id: 's' } as Session;

function stream(response: FakeResponse, signal?: AbortSignal) {
  return new TranscriptStream(response, formatter, { drainTimeoutMs: DRAIN_TIMEOUT_MS, signal });
}

describe(TranscriptStream.name, () => {
  afterEach(() => jest.useRealTimers());

  it('writes the head, every message of every page in order, and the end', async () => {
    const response = new FakeResponse();
    const pages = new FakePages(7, 3);
    const sut = stream(response);
    const outcome = await sut.run(session, pages.first(), pages.next);
    expect(outcome).toEqual({ kind: 'complete', messages: 7 });
    expect(response.written).toEqual(['H', 'm0', 'm1', 'm2', 'm3', 'm4', 'm5', 'm6', 'T']);
    // Each page read after the last order key of the one before.
    expect(pages.reads).toEqual(['000002', '000005']);
    expect(response.ended).toBe(true);
    expect(response.destroyed).toBe(false);
  });

  it('writes the head and the end of a session without messages', async () => {
    const response = new FakeResponse();
    const pages = new FakePages(0, 3);
    const outcome = await stream(response).run(session, pages.first(), pages.next);
    expect(outcome).toEqual({ kind: 'complete', messages: 0 });
    expect(response.written).toEqual(['H', 'T']);
    expect(pages.reads).toEqual([]);
  });

  it('writes nothing more, and reads no further page, until the response drains', async () => {
    const response = new FakeResponse();
    const pages = new FakePages(6, 3);
    // Full once m1 is written (H, m0, m1).
    response.fullAt.add(3);
    const written = stream(response).run(session, pages.first(), pages.next);
    await response.waitsFor('drain');
    expect(response.written).toEqual(['H', 'm0', 'm1']);
    expect(pages.reads).toEqual([]);
    response.drain();
    expect(await written).toEqual({ kind: 'complete', messages: 6 });
    expect(response.written).toEqual(['H', 'm0', 'm1', 'm2', 'm3', 'm4', 'm5', 'T']);
    expect(pages.reads).toEqual(['000002']);
  });

  it('reads the next page only once the last of the page before has drained', async () => {
    const response = new FakeResponse();
    const pages = new FakePages(6, 3);
    // Full once m2, the last of the first page, is written.
    response.fullAt.add(4);
    const written = stream(response).run(session, pages.first(), pages.next);
    await response.waitsFor('drain');
    expect(pages.reads).toEqual([]);
    response.drain();
    expect(await written).toEqual({ kind: 'complete', messages: 6 });
    expect(pages.reads).toEqual(['000002']);
  });

  it('waits for a response the head filled before writing any message', async () => {
    const response = new FakeResponse();
    const pages = new FakePages(6, 3);
    response.full = true;
    const written = stream(response).run(session, pages.first(), pages.next);
    await response.waitsFor('drain');
    expect(response.written).toEqual(['H']);
    response.drain();
    expect(await written).toEqual({ kind: 'complete', messages: 6 });
  });

  it('cuts a reader that never drains at the deadline, and reads nothing more', async () => {
    jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
    const response = new FakeResponse();
    const pages = new FakePages(6, 3);
    response.fullAt.add(3);
    const written = stream(response).run(session, pages.first(), pages.next);
    await response.waitsFor('drain');
    jest.advanceTimersByTime(DRAIN_TIMEOUT_MS - 1);
    expect(response.destroyed).toBe(false);
    jest.advanceTimersByTime(1);
    const outcome = await written;
    expect(outcome.kind).toBe('stalled');
    expect(response.destroyed).toBe(true);
    expect(response.ended).toBe(false);
    expect(pages.reads).toEqual([]);
    expect(response.written).not.toContain('T');
  });

  it('cuts a reader that stops reading the end of the answer', async () => {
    jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
    const response = new FakeResponse();
    response.finishes = false;
    const pages = new FakePages(2, 3);
    const written = stream(response).run(session, pages.first(), pages.next);
    await response.waitsFor('finish');
    expect(response.ended).toBe(true);
    jest.advanceTimersByTime(DRAIN_TIMEOUT_MS);
    expect(await written).toEqual({ kind: 'stalled', messages: 2 });
    expect(response.destroyed).toBe(true);
  });

  it('stops at once when the client goes away during a page read, and reads no more', async () => {
    const response = new FakeResponse();
    const pages = new FakePages(9, 3);
    const held = pages.hold(1);
    const written = stream(response).run(session, pages.first(), pages.next);
    await pages.asked(1);
    response.hangUp();
    // Done without waiting for the read under way, which is dropped.
    expect(await written).toEqual({ kind: 'gone', messages: 3 });
    // The read it dropped comes back: nothing is written of it, nothing more is read.
    held.resolve();
    await held.promise;
    expect(pages.reads).toEqual(['000002']);
    expect(response.written).toEqual(['H', 'm0', 'm1', 'm2']);
  });

  it('stops when the client goes away while the response waits to drain', async () => {
    const response = new FakeResponse();
    const pages = new FakePages(9, 3);
    response.full = true;
    const written = stream(response).run(session, pages.first(), pages.next);
    await response.waitsFor('drain');
    response.hangUp();
    expect(await written).toEqual({ kind: 'gone', messages: 0 });
    expect(pages.reads).toEqual([]);
    expect(response.listenerCount('drain')).toBe(0);
  });

  it('writes nothing for a client gone before it began', async () => {
    const response = new FakeResponse();
    response.destroyed = true;
    const pages = new FakePages(3, 3);
    expect(await stream(response).run(session, pages.first(), pages.next)).toEqual({
      kind: 'gone',
      messages: 0,
    });
    expect(response.written).toEqual([]);
  });

  it('cuts the connection when a page cannot be read, so that the file is not whole', async () => {
    const response = new FakeResponse();
    const pages = new FakePages(9, 3);
    const outage = new Error('connection lost');
    pages.failOn(2, outage);
    const outcome = await stream(response).run(session, pages.first(), pages.next);
    expect(outcome).toEqual({ kind: 'failed', messages: 6, error: outage });
    expect(response.destroyed).toBe(true);
    expect(response.ended).toBe(false);
    expect(response.written).toEqual(['H', 'm0', 'm1', 'm2', 'm3', 'm4', 'm5']);
  });

  it('is cut when its signal aborts (the instance shuts down)', async () => {
    const response = new FakeResponse();
    const pages = new FakePages(9, 3);
    const held = pages.hold(1);
    const stop = new AbortController();
    const written = stream(response, stop.signal).run(session, pages.first(), pages.next);
    await pages.asked(1);
    stop.abort();
    expect(await written).toEqual({ kind: 'stopped', messages: 3 });
    expect(response.destroyed).toBe(true);
    held.resolve();
  });

  it('stops between two messages of a page, counting only those written', async () => {
    const response = new FakeResponse();
    const pages = new FakePages(9, 3);
    const stop = new AbortController();
    response.onWrite = (chunk) => {
      if (chunk === 'm1') stop.abort();
    };
    const outcome = await stream(response, stop.signal).run(session, pages.first(), pages.next);
    expect(outcome).toEqual({ kind: 'stopped', messages: 2 });
    expect(response.written).toEqual(['H', 'm0', 'm1']);
    expect(pages.reads).toEqual([]);
  });

  it('leaves no listener on the response once done', async () => {
    const response = new FakeResponse();
    const pages = new FakePages(4, 3);
    await stream(response).run(session, pages.first(), pages.next);
    expect(response.listenerCount('close')).toBe(0);
    expect(response.listenerCount('drain')).toBe(0);
    expect(response.listenerCount('finish')).toBe(0);
  });
});
