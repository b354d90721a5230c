import { type Provider } from '@nestjs/common';
import { describeError } from '../common/errors/describe-error.js';
import { ScribeConfig } from '../config/scribe-config.js';
import { classifyDatabaseError } from '../database/database-errors.js';
import { DatabaseHeartbeat } from '../database/database-heartbeat.js';
import { MessageStore } from '../database/message-store.js';
import { HeldMessages } from '../message/held-messages.js';
import { CoalescingWriter } from './coalescing-writer.js';
import { BacklogAndJournal } from './backlog-and-journal.js';
import { SessionEraser } from './session-eraser.js';
import { BACKLOG_PRUNER, DB_IDLE_PROBE_MS, MAX_PENDING_PER_SESSION } from './transcript.tokens.js';

/**
 * What the write path's classes take that Nest cannot build from a class alone: the numbers of
 * ScribeConfig they use, the model file's writer (its collaborators are functions), and the
 * names the read side and the durable writer know other classes by.
 */
export const transcriptProviders: Provider[] = [
  {
    provide: MAX_PENDING_PER_SESSION,
    inject: [ScribeConfig],
    useFactory: (config: ScribeConfig) => config.maxPendingPerSession,
  },
  {
    provide: DB_IDLE_PROBE_MS,
    inject: [ScribeConfig],
    useFactory: (config: ScribeConfig) => config.dbIdleProbeMs,
  },
  {
    provide: CoalescingWriter,
    inject: [MessageStore],
    useFactory: (store: MessageStore) =>
      new CoalescingWriter(store, (error) => classifyDatabaseError(error).kind, describeError),
  },
  // /health's heartbeat (DatabaseHealth.check) goes through the writer, in turn with the writes.
  { provide: DatabaseHeartbeat, useExisting: CoalescingWriter },
  // The read side knows the held messages by the abstract class (it never imports the write side).
  { provide: HeldMessages, useExisting: BacklogAndJournal },
  { provide: BACKLOG_PRUNER, useExisting: SessionEraser },
];
