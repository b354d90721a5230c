import { type EventEmitter2 } from '@nestjs/event-emitter';
import { type ScribeConfig } from '../../config/scribe-config.js';
import { type SessionListQueries } from '../../database/session-list-queries.js';
import { type SessionQueries } from '../../database/session-queries.js';
import { type SessionUpdates } from '../../database/session-updates.js';
import { type HeldMessages } from '../../message/held-messages.js';
import { MetricsService } from '../../metrics/metrics.service.js';
import { SessionReader } from '../session-reader.js';
import { sessionResolveGate } from '../session.providers.js';
import { StoredSessionLoader } from '../stored-session-loader.js';

/** A SessionReader as SessionModule builds it: its gate's loader over the same queries and config. */
export function newReader(
  queries: SessionQueries,
  config: ScribeConfig,
  events: EventEmitter2,
  held: HeldMessages,
  updates: SessionUpdates,
  lists: SessionListQueries,
): SessionReader {
  const metrics = new MetricsService();
  const gate = sessionResolveGate(
    new StoredSessionLoader(queries, config, metrics),
    config,
    metrics,
  );
  return new SessionReader(queries, config, gate, events, held, updates, lists);
}
