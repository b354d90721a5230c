import { Injectable, Logger } from '@nestjs/common';
import { EventEmitter2 } from '@nestjs/event-emitter';
import { DatabaseHealth } from '../database/database-health.js';
import { MessagesStored, WriteFailed } from '../message/message-events.js';
import { type Written } from '../message/outcomes.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { type Backlog } from './session-backlog.js';

/**
 * What every write of the write path tells the rest of the app once it is known: a store to
 * the database's health and to the live readers (MessagesStored), a failure to the health,
 * the metrics and the write-back (WriteFailed). One place, so that a fresh append, a backlog
 * written back and a replay of the journal report alike.
 */
@Injectable()
export class WriteReports {
  // Under the writer's name, as these lines have always been logged (operators search for it).
  private readonly logger = new Logger('DurableWriter');

  constructor(
    private readonly health: DatabaseHealth,
    private readonly events: EventEmitter2,
    private readonly metrics: MetricsService,
  ) {}

  stored(sessionId: string, attempt: Written): void {
    if (this.health.succeeded(sessionId)) {
      this.logger.log('Database writable again; writing back what is pending');
    }
    if (attempt.revision !== null && attempt.inserted.length > 0) {
      this.events.emit(
        MessagesStored.event,
        new MessagesStored(sessionId, attempt.inserted, attempt.revision),
      );
    }
  }

  /** `fresh`: how many messages of the failed write the backlog does not count yet. */
  failed(backlog: Backlog, error: unknown, fresh: number): void {
    this.metrics.dbWriteFailures.inc();
    this.events.emit(WriteFailed.event, new WriteFailed(backlog.sessionId));
    this.health.failed(backlog.sessionId, error, backlog.size + fresh);
  }
}
