import { Injectable } from '@nestjs/common';
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * Scribe's Prometheus metrics, on a registry of its own (not prom-client's global one) so
 * that several application instances in one process, as in tests, never collide.
 */
@Injectable()
export class MetricsService {
  readonly registry = new Registry();
  // Values read at scrape time from the services that own them.
  private readonly gaugeSources = new Map<string, () => number | Promise<number>>();

  readonly appendsTotal = new Counter({
    name: 'scribe_appends_total',
    help: 'Messages accepted by append mutations, by what happened to them.',
    labelNames: ['status'] as const,
    registers: [this.registry],
  });

  readonly pendingMessages = this.sourcedGauge(
    'scribe_pending_messages',
    'Accepted messages held in memory until the database takes them.',
  );

  readonly dbWriteFailures = new Counter({
    name: 'scribe_db_write_failures_total',
    help: 'Database writes of messages that failed.',
    registers: [this.registry],
  });

  readonly messagesDropped = new Counter({
    name: 'scribe_messages_dropped_total',
    help: 'BUFFERED messages (held in memory only, the spool unwritable) dropped past the pending cap, or at shutdown: lost.',
    registers: [this.registry],
  });

  readonly messagesDroppedByDeletion = new Counter({
    name: 'scribe_messages_dropped_by_deletion_total',
    help: 'Messages answered QUEUED or BUFFERED but accepted at or before their session was deleted (on this instance or another), dropped at write-back instead of stored.',
    registers: [this.registry],
  });

  readonly spoolMessages = this.sourcedGauge(
    'scribe_spool_messages',
    'Journaled messages on disk that the database has not taken yet.',
  );

  readonly spoolBytes = this.sourcedGauge(
    'scribe_spool_bytes',
    'Bytes of journal segments on disk.',
  );

  readonly spoolBlocked = this.sourcedGauge(
    'scribe_spool_blocked',
    "Journal files (segments, dead owners' lock files, the set-aside log) that owe records but cannot be used now; see spoolStatus.blocked.",
  );

  readonly spoolWrites = new Counter({
    name: 'scribe_spool_writes_total',
    help: 'Messages written (and synced) to the journal.',
    registers: [this.registry],
  });

  readonly spoolWriteFailures = new Counter({
    name: 'scribe_spool_write_failures_total',
    help: 'Journal writes that failed (disk full, unwritable): their messages were answered BUFFERED.',
    registers: [this.registry],
  });

  readonly spoolReplays = new Counter({
    name: 'scribe_spool_replays_total',
    help: 'Messages read back from the journal on disk and stored in the database.',
    registers: [this.registry],
  });

  readonly setAside = new Counter({
    name: 'scribe_set_aside_total',
    help: 'Records set aside in set-aside.jsonl, by reason: refused by the database, or unreadable on disk.',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  readonly sessionFullLoads = new Counter({
    name: 'scribe_session_full_loads_total',
    help: 'Full loads (metadata and whole transcript) of a session from the database.',
    registers: [this.registry],
  });

  readonly sessionResolveActive = this.sourcedGauge(
    'scribe_session_resolve_active',
    'Full session loads running now.',
  );

  readonly sessionResolveWaiting = this.sourcedGauge(
    'scribe_session_resolve_waiting',
    'Full session loads waiting for a slot.',
  );

  readonly sessionCacheHits = new Counter({
    name: 'scribe_session_cache_hits_total',
    help: 'Full session reads served from the cache after revalidation.',
    registers: [this.registry],
  });

  readonly sessionCacheMisses = new Counter({
    name: 'scribe_session_cache_misses_total',
    help: 'Full session reads that found no cached copy.',
    registers: [this.registry],
  });

  readonly sessionStaleReloads = new Counter({
    name: 'scribe_session_stale_reloads_total',
    help: 'Cached sessions reloaded because the database had newer messages.',
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry });
  }

  /** Makes the gauge `name` read its value from `source` at every scrape. */
  observeGauge(name: string, source: () => number | Promise<number>): void {
    this.gaugeSources.set(name, source);
  }

  private sourcedGauge(name: string, help: string): Gauge {
    const sources = this.gaugeSources;
    return new Gauge({
      name,
      help,
      registers: [this.registry],
      async collect() {
        const source = sources.get(name);
        if (source) this.set(await source());
      },
    });
  }

  render(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
