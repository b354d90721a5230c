import { Global, Module } from '@nestjs/common';
import { AppendIntakeModule } from '../common/lifecycle/append-intake.module.js';
import { DatabaseHeartbeat } from '../database/database-heartbeat.js';
import { DatabaseModule } from '../database/database.module.js';
import { HeldMessages } from '../message/held-messages.js';
import { SpoolModule } from '../spool/spool.module.js';
import { DurableWriter } from './durable-writer.js';
import { BacklogAndJournal } from './backlog-and-journal.js';
import { HeldMoves } from './held-moves.js';
import { JournalReplay } from './journal-replay.js';
import { StoredElsewhere } from './stored-elsewhere.js';
import { TranscriptRecovery } from './recovery.js';
import { RetryLookup } from './retry-lookup.js';
import { SessionBacklog } from './session-backlog.js';
import { SessionEraser } from './session-eraser.js';
import { transcriptProviders } from './transcript.providers.js';
import { TranscriptImporter } from './transcript-importer.js';
import { TranscriptService } from './transcript.service.js';
import { TranscriptBoot } from './transcript-boot.js';
import { MessageEdits } from './changes/message-edits.js';
import { WriteReports } from './write-reports.js';

/**
 * The write path. Global for two things only: the read side finds what is held
 * (HeldMessages) without importing the write side, and DatabaseModule's DatabaseHealth finds
 * the writer's heartbeat (DatabaseHeartbeat) without knowing the write path.
 */
@Global()
@Module({
  imports: [DatabaseModule, SpoolModule, AppendIntakeModule],
  providers: [
    ...transcriptProviders,
    SessionBacklog,
    BacklogAndJournal,
    HeldMoves,
    SessionEraser,
    WriteReports,
    JournalReplay,
    StoredElsewhere,
    DurableWriter,
    TranscriptRecovery,
    RetryLookup,
    TranscriptImporter,
    TranscriptService,
    TranscriptBoot,
    MessageEdits,
  ],
  // Its resolver is ScribeResolversModule's (see there why).
  exports: [TranscriptService, DatabaseHeartbeat, HeldMessages, SessionEraser, MessageEdits],
})
export class TranscriptModule {}
