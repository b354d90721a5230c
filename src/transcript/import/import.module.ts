import { Module } from '@nestjs/common';
import { DatabaseModule } from '../../database/database.module.js';
import { TranscriptModule } from '../transcript.module.js';
import { ImportController } from './import.controller.js';

/**
 * A transcript's import over plain HTTP (POST /sessions/{id}/import), stored through the write
 * path. A controller of Scribe's, served in either GraphQL mode, with Scribe's HTTP steps in
 * front of it (ScribePaths).
 */
@Module({
  imports: [DatabaseModule, TranscriptModule],
  controllers: [ImportController],
})
export class ImportModule {}
