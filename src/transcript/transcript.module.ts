import { Global, Module } from '@nestjs/common';
import { EventEmitter2 } from '@nestjs/event-emitter';
import { describeError } from '../common/errors/describe-error.js';
import { Failpoints } from '../common/failpoints.js';
import { ScribeConfig } from '../config/scribe-config.js';
import { classifyDatabaseError } from '../database/database-errors.js';
import { DatabaseModule } from '../database/database.module.js';
import { MessageStore } from '../database/message-store.js';
import { SessionDeletion, Tombstones } from '../database/session-deletion.js';
import { OrderKeyGenerator } from '../message/order-key.js';
import { PendingMessages } from '../message/pending-messages.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { SpoolModule } from '../spool/spool.module.js';
import { JournalIndex } from '../spool/journal-index.js';
import { Journal } from '../spool/journal.js';
import { SpoolService } from '../spool/spool.service.js';
import { CoalescingWriter } from './coalescing-writer.js';
import { DatabaseHealth } from './database-health.js';
import { DurableWriter } from './durable-writer.js';
import { HeldMessages } from './held-messages.js';
import { TranscriptRecovery } from './recovery.js';
import { SessionBacklog } from './session-backlog.js';
import { SessionEraser } from './session-eraser.js';
import { TranscriptResolver } from './transcript.resolver.js';
import { TranscriptService } from './transcript.service.js';

/**
 * The write path: its pieces are plain classes, wired here. Global for one thing only: the
 * read side finds what is pending (PendingMessages) without importing the write side.
 */
@Global()
@Module({
  imports: [DatabaseModule, SpoolModule],
  providers: [
    TranscriptService,
    TranscriptResolver,
    { provide: SessionBacklog, useFactory: () => new SessionBacklog() },
    {
      provide: PendingMessages,
      inject: [SessionBacklog, JournalIndex, Journal],
      useFactory: (backlog: SessionBacklog, index: JournalIndex, journal: Journal) =>
        new HeldMessages(backlog, index, journal),
    },
    {
      provide: CoalescingWriter,
      inject: [MessageStore],
      useFactory: (store: MessageStore) =>
        new CoalescingWriter(store, classifyDatabaseError, describeError),
    },
    {
      provide: DatabaseHealth,
      inject: [ScribeConfig],
      useFactory: (config: ScribeConfig) => new DatabaseHealth(config.dbRetryIntervalMs > 0),
    },
    {
      provide: SessionEraser,
      inject: [
        SessionBacklog,
        SessionDeletion,
        Tombstones,
        Journal,
        EventEmitter2,
        OrderKeyGenerator,
        MetricsService,
      ],
      useFactory: (
        backlog: SessionBacklog,
        deletion: SessionDeletion,
        tombstones: Tombstones,
        journal: Journal,
        events: EventEmitter2,
        clock: OrderKeyGenerator,
        metrics: MetricsService,
      ) => new SessionEraser(backlog, deletion, tombstones, journal, events, clock, metrics),
    },
    {
      provide: DurableWriter,
      inject: [
        CoalescingWriter,
        SpoolService,
        JournalIndex,
        Journal,
        DatabaseHealth,
        EventEmitter2,
        MetricsService,
        ScribeConfig,
        Failpoints,
        SessionEraser,
      ],
      useFactory: (
        writer: CoalescingWriter,
        spool: SpoolService,
        index: JournalIndex,
        journal: Journal,
        health: DatabaseHealth,
        events: EventEmitter2,
        metrics: MetricsService,
        config: ScribeConfig,
        failpoints: Failpoints,
        eraser: SessionEraser,
      ) =>
        new DurableWriter(
          writer,
          spool,
          index,
          journal,
          health,
          events,
          metrics,
          config.maxPendingPerSession,
          failpoints,
          eraser,
        ),
    },
    {
      provide: TranscriptRecovery,
      inject: [
        SessionBacklog,
        DurableWriter,
        CoalescingWriter,
        SpoolService,
        JournalIndex,
        DatabaseHealth,
        MetricsService,
        ScribeConfig,
      ],
      useFactory: (
        backlog: SessionBacklog,
        durable: DurableWriter,
        writer: CoalescingWriter,
        spool: SpoolService,
        index: JournalIndex,
        health: DatabaseHealth,
        metrics: MetricsService,
        config: ScribeConfig,
      ) =>
        new TranscriptRecovery(
          backlog,
          durable,
          writer,
          spool,
          index,
          health,
          metrics,
          config.dbRetryIntervalMs,
        ),
    },
  ],
  exports: [TranscriptService, CoalescingWriter, PendingMessages, SessionEraser],
})
export class TranscriptModule {}
