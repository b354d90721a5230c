import { Injectable } from '@nestjs/common';
import { ScribeConfig } from '../config/scribe-config.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { type MessageRecord } from '../transcript/message-record.js';
import { TranscriptObserver } from '../transcript/transcript-observer.js';
import { type FullSession, type SessionRecord } from './session-record.js';
import { SessionResolveGate, type SessionResolveGateStatus } from './session-resolve-gate.js';
import { SessionService } from './session.service.js';

/**
 * What the API reads sessions through: full loads go through the SessionResolveGate
 * (cached, single-flight, bounded); metadata and pages go straight to the database.
 */
@Injectable()
export class SessionReader implements TranscriptObserver {
  private readonly gate: SessionResolveGate;

  constructor(
    private readonly sessions: SessionService,
    config: ScribeConfig,
    private readonly metrics: MetricsService,
  ) {
    this.gate = new SessionResolveGate(
      {
        loadFull: (id) => sessions.loadFull(id),
        loadMetadata: (id) => sessions.findMetadata(id),
      },
      {
        concurrency: config.sessionResolveConcurrency,
        timeoutMs: config.sessionResolveTimeoutMs,
        cacheSize: config.sessionCacheSize,
      },
      {
        fullLoad: () => metrics.sessionFullLoads.inc(),
        cacheHit: () => metrics.sessionCacheHits.inc(),
        cacheMiss: () => metrics.sessionCacheMisses.inc(),
        staleReload: () => metrics.sessionStaleReloads.inc(),
      },
    );
    metrics.observeGauge('scribe_session_resolve_active', () => this.gate.status().activeLoads);
    metrics.observeGauge('scribe_session_resolve_waiting', () => this.gate.status().waitingLoads);
  }

  metadata(id: string): Promise<SessionRecord | null> {
    return this.gate.resolveMetadata(id);
  }

  full(id: string, signal?: AbortSignal): Promise<FullSession | null> {
    return this.gate.resolveFull(id, signal);
  }

  list(first: number, after?: string | null): Promise<SessionRecord[]> {
    return this.sessions.listSessions(first, after);
  }

  count(): Promise<number> {
    return this.sessions.countSessions();
  }

  messagePage(sessionId: string, first: number, after?: string | null): Promise<MessageRecord[]> {
    return this.sessions.listMessages(sessionId, first, after);
  }

  /** Write-through from the transcript side: keeps a cached copy current after a write. */
  messagesStored(sessionId: string, stored: MessageRecord[], revision: number): void {
    this.gate.applyStored(sessionId, stored, revision, Date.now());
  }

  // SQLite runs every statement on one connection, so a load can read a transaction's rows
  // before it commits; if it then fails, no copy read meanwhile may be kept.
  writeFailed(sessionId: string): void {
    this.gate.evict(sessionId);
  }

  gateStatus(): SessionResolveGateStatus {
    return this.gate.status();
  }
}
