import { Injectable } from '@nestjs/common';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** What an append answered (the AppendStatus, lower case), or `failed` for an error. */
export const APPEND_OUTCOMES = ['persisted', 'queued', 'buffered', 'failed'] as const;
export type AppendOutcome = (typeof APPEND_OUTCOMES)[number];

/** Why a record was set aside: the database refused it, or its bytes were unreadable. */
export const SET_ASIDE_REASONS = ['refused', 'corrupt'] as const;

/**
 * Why a request or connection was turned away by the refusal budget or the live limits:
 * - http_rate_limited: an HTTP request answered 429 by the refusal gate (its source's budget spent);
 * - http_refused: an HTTP request refused (4xx, or refused credentials) and charged to its source;
 * - live_rate_limited: a WebSocket upgrade answered 429 (budget spent, or the source's connection cap);
 * - live_full: a WebSocket upgrade answered 503 (MAX_SUBSCRIPTIONS, or too many unauthenticated);
 * - live_refused: a live connection or operation refused (credentials, scope, an init never sent).
 */
export const REFUSAL_REASONS = [
  'http_rate_limited',
  'http_refused',
  'live_rate_limited',
  'live_full',
  'live_refused',
] as const;
export type RefusalReason = (typeof REFUSAL_REASONS)[number];

// Seconds: a GraphQL request or an append is ms on a healthy database, seconds in an outage
// (a lock's busy timeout), and a full load of a large transcript can take several.
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

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

  readonly appendDuration = new Histogram({
    name: 'scribe_append_duration_seconds',
    help: 'Time an append took to be answered (its messages accepted), by its answer: persisted, queued, buffered, or failed.',
    labelNames: ['status'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });

  readonly graphqlRequestDuration = new Histogram({
    name: 'scribe_graphql_request_duration_seconds',
    help: "GraphQL requests over HTTP, from arrival at Apollo to the answer, by operation type and operation name (the one Scribe root field the operation selects, else 'other').",
    labelNames: ['operation_type', 'operation_name'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });

  readonly fullLoadDuration = new Histogram({
    name: 'scribe_full_load_duration_seconds',
    help: 'Full loads of a session (metadata and whole transcript) from the database, the query only (not the wait for a slot).',
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });

  readonly refusals = new Counter({
    name: 'scribe_refusals_total',
    help: 'Requests and live connections turned away or charged to their source, by reason (see the README).',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  readonly databaseUp = this.sourcedGauge(
    'scribe_database_up',
    'Whether the database takes writes as the write path last saw it (1) or not (0): connected, migrated, and its last write committed.',
  );

  readonly spoolOldestAge = this.sourcedGauge(
    'scribe_spool_oldest_age_seconds',
    'Age of the oldest message the journal still owes the database; 0 when it owes none.',
  );

  readonly subscriptions = this.sourcedGauge(
    'scribe_subscriptions',
    'Live subscriptions running on this instance (over WebSocket).',
  );

  readonly appendsInFlight = this.sourcedGauge(
    'scribe_appends_in_flight',
    'Appends accepted for processing and not answered yet (a shutdown waits for them).',
  );

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

  readonly spoolSetAside = this.sourcedGauge(
    'scribe_spool_set_aside',
    'Open records in set-aside.jsonl (this run and earlier ones): owed to nobody until an operator re-drives or drops them.',
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
    // Every known label value from the start, so that a rule or a rate() over a series has
    // it at 0 before the first event (a restart otherwise hides it until then).
    for (const status of APPEND_OUTCOMES) {
      if (status !== 'failed') this.appendsTotal.inc({ status }, 0);
      this.appendDuration.zero({ status });
    }
    for (const reason of SET_ASIDE_REASONS) this.setAside.inc({ reason }, 0);
    for (const reason of REFUSAL_REASONS) this.refusals.inc({ reason }, 0);
  }

  /** Counts one refusal of `reason`. */
  refused(reason: RefusalReason): void {
    this.refusals.inc({ reason });
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
