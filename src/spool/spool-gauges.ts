import { Injectable } from '@nestjs/common';
import { MetricsService } from '../metrics/metrics.service.js';
import { BlockedFiles } from './blocked-files.js';
import { JournalIndex } from './journal-index.js';

/** The spool's gauges, read at each scrape: registered once, when Nest builds this. */
@Injectable()
export class SpoolGauges {
  constructor(metrics: MetricsService, index: JournalIndex, blocked: BlockedFiles) {
    metrics.observeGauge('scribe_spool_messages', () => index.liveRecords);
    metrics.observeGauge('scribe_spool_blocked', () => blocked.size);
    metrics.observeGauge('scribe_spool_bytes', () => index.bytes);
  }
}
