import { LRUCache } from 'lru-cache';
import { type MessageRecord } from '../message/message-record.js';
import { recordBytes, type FullSession, type SessionRecord } from '../message/session-record.js';
import { KeyedLoader, type KeyedSource } from './keyed-loader.js';
import { type SessionLoader } from './session-loader.js';

export interface SessionResolveGateOptions {
  /** Most loader.loadFull calls running at once. */
  concurrency: number;
  /** Longest wait for a load slot, and longest wait of a follower on its leader. */
  timeoutMs: number;
  /** Full sessions kept in the LRU cache; 0 turns caching off. */
  cacheSize: number;
  /** Estimated bytes of all cached transcripts together; a larger session is never cached. */
  cacheMaxBytes: number;
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

/**
 * The session cache policy over a {@link KeyedLoader} of full sessions: an LRU of full
 * sessions, each revalidated by a cheap metadata read before it is served, written through by
 * this instance's own writes, and dropped when a write is missed or fails. Loading itself
 * (single flight, at most `concurrency` at once, bounded waits, aborts) is the loader's job.
 */
export class SessionResolveGate {
  private readonly cache: LRUCache<string, FullSession> | null;
  private readonly loads: KeyedLoader<FullSession | null>;

  constructor(
    private readonly loader: SessionLoader,
    private readonly options: SessionResolveGateOptions,
    private readonly metrics?: SessionResolveGateMetrics,
  ) {
    if (!Number.isInteger(options.cacheSize) || options.cacheSize < 0) {
      throw new RangeError(`cacheSize must be a non-negative integer, got ${options.cacheSize}`);
    }
    if (!(options.cacheMaxBytes > 0)) {
      throw new RangeError(`cacheMaxBytes must be positive, got ${options.cacheMaxBytes}`);
    }
    // LRUCache refuses max 0, so no cache at all stands for "no caching"
    this.cache =
      options.cacheSize > 0
        ? new LRUCache<string, FullSession>({
            max: options.cacheSize,
            maxSize: options.cacheMaxBytes,
            sizeCalculation: (full) => Math.max(1, full.bytes),
          })
        : null;
    this.loads = new KeyedLoader(new CachingSessionSource(loader, this.cache, metrics), {
      concurrency: options.concurrency,
      timeoutMs: options.timeoutMs,
      noun: 'session',
    });
  }

  async resolveFull(sessionId: string, signal?: AbortSignal): Promise<FullSession | null> {
    if (signal?.aborted || this.loads.insideLoadOf(sessionId)) {
      // An aborted caller is refused; one inside this session's own load loads beside it
      return this.loads.get(sessionId, signal);
    }
    const cached = this.cache?.get(sessionId);
    if (!cached) {
      this.metrics?.cacheMiss();
      return this.loads.get(sessionId, signal);
    }

    const current = await this.loads.waitFor(
      this.loader.loadMetadata(sessionId),
      signal,
      sessionId,
    );
    if (current === null) {
      this.evict(sessionId);
      return null;
    }
    if (current.revision <= cached.session.revision) {
      this.metrics?.cacheHit();
      return cached;
    }

    this.metrics?.staleReload();
    const reloaded = await this.loads.get(sessionId, signal);
    if (reloaded !== null && reloaded.session.revision < current.revision) {
      // Joined a load that read before the revision we saw: one fresh load catches up
      return this.loads.get(sessionId, signal);
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
    if (this.loads.isLoading(sessionId)) {
      // A load already reading may have read before this write; one still waiting for a slot
      // will read after it, and its followers can keep waiting for it.
      this.loads.invalidate(sessionId, { evenWaiting: false });
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
    for (const message of messages) {
      insertInOrder(cached.messages, message);
      cached.bytes += recordBytes(message);
    }
    cached.session = {
      ...cached.session,
      revision,
      messageCount: cached.session.messageCount + messages.length,
      updatedAt: storedAt,
    };
    // Sized again: a copy grown past the byte bound leaves the cache.
    this.cache?.set(sessionId, cached);
  }

  evict(sessionId: string): void {
    this.cache?.delete(sessionId);
    this.loads.invalidate(sessionId);
  }

  status(): SessionResolveGateStatus {
    return {
      ...this.loads.status(),
      cacheSize: this.cache?.size ?? 0,
      cacheCapacity: this.options.cacheSize,
      concurrency: this.options.concurrency,
    };
  }
}

/**
 * The gate's full loads as its KeyedLoader runs them: each one counted and read through the
 * SessionLoader, and its result, once settled, kept in the cache or dropped from it. It talks
 * only to what lies below the gate (the loader, the cache, the counters), never to the gate.
 */
class CachingSessionSource implements KeyedSource<FullSession | null> {
  constructor(
    private readonly loader: SessionLoader,
    private readonly cache: LRUCache<string, FullSession> | null,
    private readonly metrics: SessionResolveGateMetrics | undefined,
  ) {}

  load(sessionId: string): Promise<FullSession | null> {
    this.metrics?.fullLoad();
    return this.loader.loadFull(sessionId);
  }

  /**
   * A session gone, or one that stopped short, leaves the cache; a copy read before a write
   * (not current) is not kept.
   */
  settled(sessionId: string, loaded: FullSession | null, current: boolean): void {
    if (loaded === null || !loaded.complete) this.cache?.delete(sessionId);
    else if (current) this.cache?.set(sessionId, loaded);
  }
}

/** Inserts by order key; appends at the end in the common case without searching. */
function insertInOrder(messages: MessageRecord[], message: MessageRecord): void {
  let index = messages.length;
  while (index > 0 && messages[index - 1].orderKey > message.orderKey) index -= 1;
  messages.splice(index, 0, message);
}
