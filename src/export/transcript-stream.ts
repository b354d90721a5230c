import { toMessageModel } from '../common/graphql/message.mapper.js';
import { type Session } from '../common/graphql/models/session.model.js';
import { type Page } from '../common/pagination/page-request.js';
import { type MessageRecord } from '../message/message-record.js';
import { type TranscriptFormatter } from './transcript-formats.js';

type SinkEvent = 'drain' | 'close' | 'finish';

/** What of an HTTP response an export writes to (Node's ServerResponse is one). */
export interface ExportSink {
  readonly destroyed: boolean;
  write(chunk: string): boolean;
  end(): unknown;
  /** Cuts the connection: the client sees a truncated transfer, never a short but whole file. */
  destroy(): unknown;
  once(event: SinkEvent, listener: () => void): unknown;
  off(event: SinkEvent, listener: () => void): unknown;
}

/** The page of stored messages after the order key `after`, in accepted order. */
export type PageReader = (after: string) => Promise<Page<MessageRecord>>;

/** What an export came to; `messages` counts the messages written. */
export type ExportOutcome =
  | { kind: 'complete'; messages: number }
  /** The client went away: nothing more was read. */
  | { kind: 'gone'; messages: number }
  /** Stopped from outside (`signal`: the instance shuts down); the connection was cut. */
  | { kind: 'stopped'; messages: number }
  /** The client took nothing within the drain deadline; the connection was cut. */
  | { kind: 'stalled'; messages: number }
  /** A page could not be read once the answer had begun; the connection was cut. */
  | { kind: 'failed'; messages: number; error: unknown };

export interface TranscriptStreamOptions {
  /** How long a write may wait for 'drain' (or the last one for 'finish') before the cut. */
  drainTimeoutMs: number;
  /** Aborted to stop the export (the instance shuts down). */
  signal?: AbortSignal;
}

type Interruption = 'gone' | 'stopped';
type Waited = 'flowing' | 'stalled' | Interruption;

/**
 * Writes one transcript to an HTTP response, page by page, holding one page at a time whatever
 * its length. Why it owns the flow: Node buffers whatever is written to a response without
 * limit, so a client that reads slower than the database is read would have the whole
 * transcript held in memory for it. So each message is written only once the response took the
 * last ('drain' after a write that returned false), and the next page is read only once its
 * page is written. A client that takes nothing for `drainTimeoutMs` is cut rather than waited
 * on for ever; one that goes away stops the reads at once (a page being read is dropped).
 */
export class TranscriptStream {
  private messages = 0;
  private interruption: Interruption | undefined;
  private readonly interrupted: Promise<Interruption>;
  private readonly stopWatching: () => void;

  constructor(
    private readonly sink: ExportSink,
    private readonly formatter: TranscriptFormatter,
    private readonly options: TranscriptStreamOptions,
  ) {
    let interrupt!: (interruption: Interruption) => void;
    this.interrupted = new Promise((resolve) => {
      interrupt = (interruption) => resolve((this.interruption ??= interruption));
    });
    const gone = () => interrupt('gone');
    const stopped = () => interrupt('stopped');
    if (sink.destroyed) gone();
    if (options.signal?.aborted) stopped();
    sink.once('close', gone);
    options.signal?.addEventListener('abort', stopped, { once: true });
    this.stopWatching = () => {
      sink.off('close', gone);
      options.signal?.removeEventListener('abort', stopped);
    };
  }

  /** Writes the session, the messages of `first` and of every page after it, and the end. */
  async run(
    session: Session,
    first: Page<MessageRecord>,
    next: PageReader,
  ): Promise<ExportOutcome> {
    try {
      return await this.write(session, first, next);
    } finally {
      this.stopWatching();
    }
  }

  private async write(
    session: Session,
    first: Page<MessageRecord>,
    next: PageReader,
  ): Promise<ExportOutcome> {
    let waited = await this.send(this.formatter.head(session));
    let page: Page<MessageRecord> | undefined = first;
    while (waited === 'flowing' && page) {
      for (const record of page.items) {
        // Counted only if written: stopped between two messages, the next is not.
        if (this.interruption) return this.cut(this.interruption);
        waited = await this.send(this.formatter.message(toMessageModel(record), this.messages));
        this.messages++;
        if (waited !== 'flowing') return this.cut(waited);
      }
      const last = page.items.at(-1);
      if (!page.hasNextPage || last === undefined) break;
      // Dropped before the next is read: one page in memory, never two.
      page = undefined;
      const read = await this.read(next, last.orderKey);
      if ('interruption' in read) return this.cut(read.interruption);
      if ('error' in read) {
        this.sink.destroy();
        return { kind: 'failed', messages: this.messages, error: read.error };
      }
      page = read.page;
    }
    if (waited !== 'flowing') return this.cut(waited);
    waited = await this.finish(this.formatter.tail());
    return waited === 'flowing' ? { kind: 'complete', messages: this.messages } : this.cut(waited);
  }

  /** The next page, or why there is none: its read failed, or the export was interrupted. */
  private read(
    next: PageReader,
    after: string,
  ): Promise<{ page: Page<MessageRecord> } | { error: unknown } | { interruption: Interruption }> {
    if (this.interruption) return Promise.resolve({ interruption: this.interruption });
    const reading = Promise.resolve()
      .then(() => next(after))
      .then(
        (page) => ({ page }),
        (error: unknown) => ({ error }),
      );
    return Promise.race([reading, this.interrupted.then((interruption) => ({ interruption }))]);
  }

  /** Writes `chunk`; when the response holds more than it should, waits until it drains. */
  private send(chunk: string): Promise<Waited> | Waited {
    if (this.interruption) return this.interruption;
    if (chunk === '' || this.sink.write(chunk)) return 'flowing';
    return this.until('drain');
  }

  /** Writes the last of it and ends the response, within the same deadline. */
  private async finish(chunk: string): Promise<Waited> {
    const waited = await this.send(chunk);
    if (waited !== 'flowing') return waited;
    // Ended now, the answer may still wait in Node's buffers for a client that stopped reading.
    const finished = this.until('finish');
    this.sink.end();
    return finished;
  }

  /** Until the sink emits `event`, the export is interrupted, or the deadline passes. */
  private async until(event: 'drain' | 'finish'): Promise<Waited> {
    let timer: NodeJS.Timeout | undefined;
    let heard!: () => void;
    try {
      return await Promise.race<Waited>([
        new Promise<Waited>((resolve) => {
          heard = () => resolve('flowing');
          this.sink.once(event, heard);
        }),
        new Promise<Waited>((resolve) => {
          timer = setTimeout(() => resolve('stalled'), this.options.drainTimeoutMs);
        }),
        this.interrupted,
      ]);
    } finally {
      clearTimeout(timer);
      this.sink.off(event, heard);
    }
  }

  /** Ends an export short: the connection is cut, unless the client cut it first. */
  private cut(why: Exclude<Waited, 'flowing'>): ExportOutcome {
    if (why !== 'gone') this.sink.destroy();
    return { kind: why, messages: this.messages };
  }
}
