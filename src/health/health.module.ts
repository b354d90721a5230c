import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { DatabaseModule } from '../database/database.module.js';
import { SpoolModule } from '../spool/spool.module.js';
import { TranscriptModule } from '../transcript/transcript.module.js';
import { HealthController } from './health.controller.js';

@Module({
  imports: [TerminusModule, DatabaseModule, TranscriptModule, SpoolModule],
  controllers: [HealthController],
})
export class HealthModule {}
