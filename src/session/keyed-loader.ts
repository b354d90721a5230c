import { AsyncLocalStorage } from 'node:async_hooks';
import { E_TIMEOUT, Semaphore, withTimeout, type SemaphoreInterface } from 'async-mutex';
import { ScribeErrorCode } from '../common/errors/scribe-error-code.js';
import { ScribeException } from '../common/errors/scribe.exception.js';

export interface KeyedLoaderOptions {
  /** Most loads running at once. */
  concurrency: number;
  /** Longest wait for a slot, and longest wait of a follower on its leader. */
  timeoutMs: number;
  /** What a key names, for error messages ("session"). */
  noun: string;
}

export interface KeyedLoaderStatus {
  /** Loads holding a slot. */
  activeLoads: number;
  /** Leaders waiting for a slot. */
  waitingLoads: number;
  /** Keys with a single-flight load under way. */
  inFlight: number;
}

/**
 * What a KeyedLoader reads keys from, and tells what a load came to. The loader calls it and
 * nothing else; it never calls back into the loader's own caller.
 */
export interface KeyedSource<V> {
  /**
   * Reads the key's value: once per load, inside that load's async context, so that what it
   * loads in turn (nested) counts as loaded from inside this key's load.
   */
  load(key: string): Promise<V>;
  /**
   * A single-flight load's value, once, before any of its callers hears it: `current` false
   * when the key was invalidated while the load read. A nested load run beside a flight (from
   * inside a load) settles nothing: only the flight's own value is reported.
   */
  settled(key: string, value: V, current: boolean): void;
}

/** One single-flight load: the leader runs it, followers await its promise. */
interface Flight<V> {
  promise: Promise<V>;
  /** Holds a slot (or runs nested under one) and is calling the load. */
  running: boolean;
  /** Something changed meanwhile: its result must not be kept or joined. */
  invalidated: boolean;
}

/** What the current async context is doing inside a load. */
interface LoadContext {
  /** Keys being loaded along this chain of nested calls. */
  loading: ReadonlySet<string>;
  /** Set once the load returns, so fire-and-forget work started inside it gets no privileges. */
  done: boolean;
}

/**
 * Loads each key once however many callers ask at once (single flight), at most `concurrency`
 * loads at a time, with a bounded wait for a slot and for a leader, and each caller free to
 * abort its own wait. A load that itself loads other keys (nested) runs under its own slot:
 * taking another could deadlock. It knows nothing of what it loads: its {@link KeyedSource}
 * reads the value, and hears once per single-flight load whether the result is still good.
 */
export class KeyedLoader<V> {
  private readonly slots: SemaphoreInterface;
  private readonly inFlight = new Map<string, Flight<V>>();
  private readonly context = new AsyncLocalStorage<LoadContext>();
  private activeLoads = 0;
  private waitingLoads = 0;

  constructor(
    private readonly source: KeyedSource<V>,
    private readonly options: KeyedLoaderOptions,
  ) {
    if (!Number.isInteger(options.concurrency) || options.concurrency < 1) {
      throw new RangeError(`concurrency must be a positive integer, got ${options.concurrency}`);
    }
    if (!(options.timeoutMs > 0)) {
      throw new RangeError(`timeoutMs must be positive, got ${options.timeoutMs}`);
    }
    this.slots = withTimeout(new Semaphore(options.concurrency), options.timeoutMs);
  }

  /** Joins the key's load under way, or leads a new one. */
  get(key: string, signal?: AbortSignal): Promise<V> {
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    const context = this.currentContext();
    if (context?.loading.has(key)) {
      // Called from inside this key's own load: joining the flight would wait on itself
      return this.callLoad(key, context);
    }
    const existing = this.inFlight.get(key);
    if (existing && !existing.invalidated) {
      if (context && !existing.running) {
        // That leader may be queued for the very slot this context holds: load beside it
        return this.callLoad(key, context);
      }
      return this.within(existing.promise, signal, this.options.timeoutMs, key);
    }
    const flight = this.lead(key, context);
    // The leader's own caller may abort; the load goes on for the followers
    return this.within(flight.promise, signal, null, key);
  }

  /**
   * The key changed. A load already reading may have read before the change: its result is
   * not kept and later callers start a new one. A load still waiting for a slot will read after
   * the change, and its followers may keep waiting for it.
   */
  invalidate(key: string, { evenWaiting = true } = {}): void {
    const flight = this.inFlight.get(key);
    if (flight && (evenWaiting || flight.running)) flight.invalidated = true;
  }

  /** Whether the current async context runs inside the load of `key` (a nested call). */
  insideLoadOf(key: string): boolean {
    return this.currentContext()?.loading.has(key) ?? false;
  }

  isLoading(key: string): boolean {
    return this.inFlight.has(key);
  }

  /** Races `promise` against the caller's signal (and no timeout): for the caller's own reads. */
  waitFor<T>(promise: Promise<T>, signal: AbortSignal | undefined, key: string): Promise<T> {
    return this.within(promise, signal, null, key);
  }

  status(): KeyedLoaderStatus {
    return {
      activeLoads: this.activeLoads,
      waitingLoads: this.waitingLoads,
      inFlight: this.inFlight.size,
    };
  }

  private currentContext(): LoadContext | undefined {
    const context = this.context.getStore();
    return context && !context.done ? context : undefined;
  }

  private lead(key: string, context: LoadContext | undefined): Flight<V> {
    const flight: Flight<V> = {
      promise: Promise.resolve(undefined as V),
      running: false,
      invalidated: false,
    };
    // Registered before the load starts so that every later caller joins it
    this.inFlight.set(key, flight);
    flight.promise = this.runFlight(key, flight, context);
    // Callers that abort stop listening; the rejection must not go unhandled then
    flight.promise.catch(() => undefined);
    return flight;
  }

  private async runFlight(
    key: string,
    flight: Flight<V>,
    context: LoadContext | undefined,
  ): Promise<V> {
    try {
      let value: V;
      if (context) {
        flight.running = true;
        value = await this.callLoad(key, context);
      } else {
        value = await this.loadWithSlot(key, flight);
      }
      this.source.settled(key, value, !flight.invalidated);
      return value;
    } finally {
      // A newer flight may have replaced an invalidated one; leave that one alone
      if (this.inFlight.get(key) === flight) this.inFlight.delete(key);
    }
  }

  private async loadWithSlot(key: string, flight: Flight<V>): Promise<V> {
    const release = await this.acquireSlot(key);
    this.activeLoads += 1;
    flight.running = true;
    try {
      return await this.callLoad(key, undefined);
    } finally {
      this.activeLoads -= 1;
      release();
    }
  }

  private async acquireSlot(key: string): Promise<SemaphoreInterface.Releaser> {
    this.waitingLoads += 1;
    try {
      // On timeout withTimeout releases the slot itself as soon as it is granted
      const [, release] = await this.slots.acquire();
      return release;
    } catch (error) {
      if (error === E_TIMEOUT) {
        throw new ScribeException(
          ScribeErrorCode.SessionResolveTimeout,
          `No ${this.options.noun} load slot freed up within ${this.options.timeoutMs} ms (${this.options.noun} ${key})`,
        );
      }
      throw error;
    } finally {
      this.waitingLoads -= 1;
    }
  }

  private callLoad(key: string, outer: LoadContext | undefined): Promise<V> {
    const loading = new Set(outer?.loading);
    loading.add(key);
    const context: LoadContext = { loading, done: false };
    return this.context.run(context, async () => {
      try {
        return await this.source.load(key);
      } finally {
        context.done = true;
      }
    });
  }

  /** Waits for `promise`, giving up on abort or, when `timeoutMs` is set, on timeout. */
  private async within<T>(
    promise: Promise<T>,
    signal: AbortSignal | undefined,
    timeoutMs: number | null,
    key: string,
  ): Promise<T> {
    if (!signal && timeoutMs === null) return promise;
    if (signal?.aborted) throw abortReason(signal);
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    // Never resolves; it only rejects when this caller gives up
    const givingUp = new Promise<never>((_, reject) => {
      if (signal) {
        onAbort = () => reject(abortReason(signal));
        signal.addEventListener('abort', onAbort, { once: true });
      }
      if (timeoutMs !== null) {
        timer = setTimeout(() => {
          reject(
            new ScribeException(
              ScribeErrorCode.SessionResolveTimeout,
              `${capitalized(this.options.noun)} ${key} did not finish loading within ${timeoutMs} ms`,
            ),
          );
        }, timeoutMs);
      }
    });
    try {
      return await Promise.race([promise, givingUp]);
    } finally {
      clearTimeout(timer);
      if (onAbort) signal?.removeEventListener('abort', onAbort);
    }
  }
}

const capitalized = (word: string) => word.charAt(0).toUpperCase() + word.slice(1);

/** The signal's reason when it is an Error, else an AbortError that carries it. */
function abortReason(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  if (reason instanceof Error) return reason;
  const error = new Error('The operation was aborted', { cause: reason });
  error.name = 'AbortError';
  return error;
}
