import { Module } from '@nestjs/common';
import { DatabaseModule } from '../database/database.module.js';
import { SpoolModule } from '../spool/spool.module.js';
import { TranscriptResolver } from './transcript.resolver.js';
import { TranscriptService } from './transcript.service.js';

@Module({
  imports: [DatabaseModule, SpoolModule],
  providers: [TranscriptService, TranscriptResolver],
  exports: [TranscriptService],
})
export class TranscriptModule {}
