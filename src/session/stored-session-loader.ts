import { Injectable } from '@nestjs/common';
import { ScribeConfig } from '../config/scribe-config.js';
import { fromDatabase } from '../database/database-errors.js';
import { SessionQueries } from '../database/session-queries.js';
import { type FullSession, type SessionRecord } from '../message/session-record.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { type SessionLoader } from './session-loader.js';

/**
 * The SessionLoader over the database's queries, timing each full load into the metrics. An
 * outage of the database is told apart from a fault here (fromDatabase), for every load.
 */
@Injectable()
export class StoredSessionLoader implements SessionLoader {
  constructor(
    private readonly queries: SessionQueries,
    private readonly config: ScribeConfig,
    private readonly metrics: MetricsService,
  ) {}

  // A transcript too large to cache is not loaded whole: it is read page by page.
  async loadFull(sessionId: string): Promise<FullSession | null> {
    const timer = this.metrics.fullLoadDuration.startTimer();
    try {
      return await fromDatabase(this.queries.loadFull(sessionId, this.config.sessionCacheMaxBytes));
    } finally {
      timer();
    }
  }

  loadMetadata(sessionId: string): Promise<SessionRecord | null> {
    return fromDatabase(this.queries.findMetadata(sessionId));
  }
}
