import { type Provider } from '@nestjs/common';
import { ScribeConfig } from '../config/scribe-config.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { EVENT_ONLY_SUBSCRIPTIONS } from './live.resolver.js';
import { PRINCIPAL_SLOTS, SOURCE_SLOTS } from './live.tokens.js';
import { SharedExecution } from './shared-execution.js';
import { SlotCounts } from './slot-counts.js';

/**
 * The slot counts live connections are admitted by, sized from ScribeConfig; and how an event
 * is executed for its subscribers.
 */
export const liveProviders: Provider[] = [
  { provide: SharedExecution, useFactory: () => new SharedExecution(EVENT_ONLY_SUBSCRIPTIONS) },
  {
    provide: SOURCE_SLOTS,
    inject: [ScribeConfig],
    useFactory: (config: ScribeConfig) =>
      new SlotCounts(config.subscriptions.maxConnectionsPerSource),
  },
  {
    provide: PRINCIPAL_SLOTS,
    inject: [ScribeConfig, MetricsService],
    useFactory: (config: ScribeConfig, metrics: MetricsService) => {
      // Every running subscription holds one slot of its principal's.
      const running = new SlotCounts(config.subscriptions.maxPerPrincipal);
      metrics.observeGauge('scribe_subscriptions', () => running.total);
      return running;
    },
  },
];
