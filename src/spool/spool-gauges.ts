import { Injectable } from '@nestjs/common';
import { MetricsService } from '../metrics/metrics.service.js';
import { BlockedFiles } from './blocked-files.js';
import { JournalIndex } from './journal-index.js';
import { SetAsideLog } from './set-aside-log.js';

/** The spool's gauges, read at each scrape: registered once, when Nest builds this. */
@Injectable()
export class SpoolGauges {
  constructor(
    metrics: MetricsService,
    index: JournalIndex,
    blocked: BlockedFiles,
    setAsideLog: SetAsideLog,
  ) {
    metrics.observeGauge('scribe_spool_messages', () => index.liveRecords);
    metrics.observeGauge('scribe_spool_blocked', () => blocked.size);
    metrics.observeGauge('scribe_spool_bytes', () => index.bytes);
    metrics.observeGauge('scribe_spool_set_aside', () => setAsideLog.count);
    // From the index in memory, as every gauge here: a scrape reads no file.
    metrics.observeGauge('scribe_spool_oldest_age_seconds', () => {
      const oldest = index.oldestAcceptedAt;
      return oldest === null ? 0 : Math.max(0, Date.now() - oldest) / 1000;
    });
  }
}
