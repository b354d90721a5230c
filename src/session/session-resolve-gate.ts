import { AsyncLocalStorage } from 'node:async_hooks';
import { E_TIMEOUT, Semaphore, withTimeout, type SemaphoreInterface } from 'async-mutex';
import { LRUCache } from 'lru-cache';
import { ScribeErrorCode } from '../common/errors/scribe-error-code.js';
import { ScribeException } from '../common/errors/scribe.exception.js';
import { type MessageRecord } from '../message/message-record.js';
import { type FullSession, type SessionRecord } from '../message/session-record.js';

export interface SessionLoader {
  /** Metadata + whole transcript; null when the session does not exist. The expensive read. */
  loadFull(sessionId: string): Promise<FullSession | null>;
  /** Metadata only; null when unknown. Cheap. */
  loadMetadata(sessionId: string): Promise<SessionRecord | null>;
}

export interface SessionResolveGateOptions {
  /** Most loader.loadFull calls running at once. */
  concurrency: number;
  /** Longest wait for a load slot, and longest wait of a follower on its leader. */
  timeoutMs: number;
  /** Full sessions kept in the LRU cache; 0 turns caching off. */
  cacheSize: number;
}

/** Counters the gate bumps; every method is optional to implement meaningfully. */
export interface SessionResolveGateMetrics {
  /** One actual loader.loadFull call. */
  fullLoad(): void;
  /** A caller was answered from the cache after revalidation. */
  cacheHit(): void;
  /** A caller found nothing cached. */
  cacheMiss(): void;
  /** A caller found a cached copy that the database has moved past. */
  staleReload(): void;
}

export interface SessionResolveGateStatus {
  /** Loads holding a slot. */
  activeLoads: number;
  /** Leaders waiting for a slot. */
  waitingLoads: number;
  /** Sessions with a single-flight load under way. */
  inFlight: number;
  cacheSize: number;
  cacheCapacity: number;
  concurrency: number;
}

/** One single-flight load: the leader runs it, followers await its promise. */
interface Flight {
  promise: Promise<FullSession | null>;
  /** Holds a slot (or runs nested under one) and is calling the loader. */
  running: boolean;
  /** A write or eviction happened meanwhile: its result must not be cached or joined. */
  invalidated: boolean;
}

/** What the current async context is doing inside a loader.loadFull call. */
interface LoadContext {
  /** Sessions being loaded along this chain of nested calls. */
  loading: ReadonlySet<string>;
  /** Set once the load returns, so fire-and-forget work started inside it gets no privileges. */
  done: boolean;
}

/**
 * Bounds and de-duplicates full session loads: an LRU of full sessions revalidated by a cheap
 * metadata read, one in-flight load per session shared by every caller, and at most
 * `concurrency` loads at once, with a bounded wait for a slot.
 */
export class SessionResolveGate {
  private readonly cache: LRUCache<string, FullSession> | null;
  private readonly slots: SemaphoreInterface;
  private readonly inFlight = new Map<string, Flight>();
  private readonly context = new AsyncLocalStorage<LoadContext>();
  private activeLoads = 0;
  private waitingLoads = 0;

  constructor(
    private readonly loader: SessionLoader,
    private readonly options: SessionResolveGateOptions,
    private readonly metrics?: SessionResolveGateMetrics,
  ) {
    if (!Number.isInteger(options.concurrency) || options.concurrency < 1) {
      throw new RangeError(`concurrency must be a positive integer, got ${options.concurrency}`);
    }
    if (!(options.timeoutMs > 0)) {
      throw new RangeError(`timeoutMs must be positive, got ${options.timeoutMs}`);
    }
    if (!Number.isInteger(options.cacheSize) || options.cacheSize < 0) {
      throw new RangeError(`cacheSize must be a non-negative integer, got ${options.cacheSize}`);
    }
    // LRUCache refuses max 0, so no cache at all stands for "no caching"
    this.cache =
      options.cacheSize > 0 ? new LRUCache<string, FullSession>({ max: options.cacheSize }) : null;
    this.slots = withTimeout(new Semaphore(options.concurrency), options.timeoutMs);
  }

  async resolveFull(sessionId: string, signal?: AbortSignal): Promise<FullSession | null> {
    if (signal?.aborted) throw abortReason(signal);
    const context = this.currentContext();
    if (context?.loading.has(sessionId)) {
      // Called from inside this session's own load: joining the flight would wait on itself
      return this.callLoader(sessionId, context);
    }

    const cached = this.cache?.get(sessionId);
    if (!cached) {
      this.metrics?.cacheMiss();
      return this.joinOrLead(sessionId, context, signal);
    }

    const current = await this.within(this.loader.loadMetadata(sessionId), signal, null, sessionId);
    if (current === null) {
      this.evict(sessionId);
      return null;
    }
    if (current.revision <= cached.session.revision) {
      this.metrics?.cacheHit();
      return cached;
    }

    this.metrics?.staleReload();
    const reloaded = await this.joinOrLead(sessionId, context, signal);
    if (reloaded !== null && reloaded.session.revision < current.revision) {
      // Joined a load that read before the revision we saw: one fresh load catches up
      return this.joinOrLead(sessionId, context, signal);
    }
    return reloaded;
  }

  resolveMetadata(sessionId: string): Promise<SessionRecord | null> {
    return this.loader.loadMetadata(sessionId);
  }

  /**
   * Write-through after this instance stored `messages`, leaving the session at `revision`: a
   * cached copy takes them in their accepted place (replayed messages can be older than cached
   * ones) when it was exactly one write behind, and is dropped otherwise.
   */
  applyStored(
    sessionId: string,
    messages: MessageRecord[],
    revision: number,
    storedAt: number,
  ): void {
    const flight = this.inFlight.get(sessionId);
    if (flight) {
      // A load already reading may have read before this write; one still waiting for a slot
      // will read after it, and its followers can keep waiting for it.
      if (flight.running) flight.invalidated = true;
      this.cache?.delete(sessionId);
      return;
    }
    const cached = this.cache?.get(sessionId);
    if (!cached || messages.length === 0) return;
    if (cached.session.revision + messages.length !== revision) {
      // Writes were missed (another instance) or already seen (a load that read them before
      // they committed): only a reload is sure to be right.
      this.cache?.delete(sessionId);
      return;
    }
    for (const message of messages) insertInOrder(cached.messages, message);
    cached.session = {
      ...cached.session,
      revision,
      messageCount: cached.session.messageCount + messages.length,
      updatedAt: storedAt,
    };
  }

  evict(sessionId: string): void {
    this.cache?.delete(sessionId);
    const flight = this.inFlight.get(sessionId);
    if (flight) flight.invalidated = true;
  }

  status(): SessionResolveGateStatus {
    return {
      activeLoads: this.activeLoads,
      waitingLoads: this.waitingLoads,
      inFlight: this.inFlight.size,
      cacheSize: this.cache?.size ?? 0,
      cacheCapacity: this.options.cacheSize,
      concurrency: this.options.concurrency,
    };
  }

  private currentContext(): LoadContext | undefined {
    const context = this.context.getStore();
    return context && !context.done ? context : undefined;
  }

  private joinOrLead(
    sessionId: string,
    context: LoadContext | undefined,
    signal: AbortSignal | undefined,
  ): Promise<FullSession | null> {
    const existing = this.inFlight.get(sessionId);
    if (existing && !existing.invalidated) {
      if (context && !existing.running) {
        // That leader may be queued for the very slot this context holds: load beside it
        return this.callLoader(sessionId, context);
      }
      return this.within(existing.promise, signal, this.options.timeoutMs, sessionId);
    }
    const flight = this.lead(sessionId, context);
    // The leader's own caller may abort; the load goes on for the followers
    return this.within(flight.promise, signal, null, sessionId);
  }

  private lead(sessionId: string, context: LoadContext | undefined): Flight {
    const flight: Flight = { promise: Promise.resolve(null), running: false, invalidated: false };
    // Registered before the load starts so that every later caller joins it
    this.inFlight.set(sessionId, flight);
    flight.promise = this.runFlight(sessionId, flight, context);
    // Callers that abort stop listening; the rejection must not go unhandled then
    flight.promise.catch(() => undefined);
    return flight;
  }

  private async runFlight(
    sessionId: string,
    flight: Flight,
    context: LoadContext | undefined,
  ): Promise<FullSession | null> {
    try {
      const loaded = context
        ? await this.loadUnderOuterSlot(sessionId, flight, context)
        : await this.loadWithSlot(sessionId, flight);
      if (loaded === null) {
        this.cache?.delete(sessionId);
      } else if (!flight.invalidated) {
        this.cache?.set(sessionId, loaded);
      }
      return loaded;
    } finally {
      // A newer flight may have replaced an invalidated one; leave that one alone
      if (this.inFlight.get(sessionId) === flight) this.inFlight.delete(sessionId);
    }
  }

  /** Nested under a load that already holds a slot: taking another could deadlock. */
  private loadUnderOuterSlot(
    sessionId: string,
    flight: Flight,
    context: LoadContext,
  ): Promise<FullSession | null> {
    flight.running = true;
    return this.callLoader(sessionId, context);
  }

  private async loadWithSlot(sessionId: string, flight: Flight): Promise<FullSession | null> {
    const release = await this.acquireSlot(sessionId);
    this.activeLoads += 1;
    flight.running = true;
    try {
      return await this.callLoader(sessionId, undefined);
    } finally {
      this.activeLoads -= 1;
      release();
    }
  }

  private async acquireSlot(sessionId: string): Promise<SemaphoreInterface.Releaser> {
    this.waitingLoads += 1;
    try {
      // On timeout withTimeout releases the slot itself as soon as it is granted
      const [, release] = await this.slots.acquire();
      return release;
    } catch (error) {
      if (error === E_TIMEOUT) {
        throw new ScribeException(
          ScribeErrorCode.SessionResolveTimeout,
          `No session load slot freed up within ${this.options.timeoutMs} ms (session ${sessionId})`,
        );
      }
      throw error;
    } finally {
      this.waitingLoads -= 1;
    }
  }

  private callLoader(
    sessionId: string,
    outer: LoadContext | undefined,
  ): Promise<FullSession | null> {
    const loading = new Set(outer?.loading);
    loading.add(sessionId);
    const context: LoadContext = { loading, done: false };
    return this.context.run(context, async () => {
      this.metrics?.fullLoad();
      try {
        return await this.loader.loadFull(sessionId);
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
    sessionId: string,
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
              `Session ${sessionId} did not finish loading within ${timeoutMs} ms`,
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

/** The signal's reason when it is an Error, else an AbortError that carries it. */
function abortReason(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  if (reason instanceof Error) return reason;
  const error = new Error('The operation was aborted', { cause: reason });
  error.name = 'AbortError';
  return error;
}

/** Inserts by order key; appends at the end in the common case without searching. */
function insertInOrder(messages: MessageRecord[], message: MessageRecord): void {
  let index = messages.length;
  while (index > 0 && messages[index - 1].orderKey > message.orderKey) index -= 1;
  messages.splice(index, 0, message);
}
