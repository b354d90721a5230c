import { Module } from '@nestjs/common';
import { DatabaseModule } from '../database/database.module.js';
import { ExportController } from './export.controller.js';
import { DEFAULT_EXPORT_DRAIN_TIMEOUT_MS, EXPORT_DRAIN_TIMEOUT_MS } from './export.tokens.js';
import { StoredTranscripts } from './stored-transcripts.js';

/**
 * A transcript's export over plain HTTP (GET /sessions/{id}/export), read straight from the
 * database. A controller of Scribe's, served in either GraphQL mode, with Scribe's HTTP steps
 * in front of it (ScribePaths).
 */
@Module({
  imports: [DatabaseModule],
  controllers: [ExportController],
  providers: [
    StoredTranscripts,
    { provide: EXPORT_DRAIN_TIMEOUT_MS, useValue: DEFAULT_EXPORT_DRAIN_TIMEOUT_MS },
  ],
})
export class ExportModule {}
