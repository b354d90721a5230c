import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { SessionReader } from '../session/session-reader.js';
import { SessionModule } from '../session/session.module.js';
import { SpoolModule } from '../spool/spool.module.js';
import { MessageEntity } from './entities/message.entity.js';
import { TranscriptObserver } from './transcript-observer.js';
import { TranscriptResolver } from './transcript.resolver.js';
import { TranscriptService } from './transcript.service.js';
import { TranscriptStore } from './transcript.store.js';
import { TypeOrmTranscriptStore } from './typeorm-transcript.store.js';

@Module({
  imports: [TypeOrmModule.forFeature([MessageEntity]), SessionModule, SpoolModule],
  providers: [
    TranscriptService,
    TranscriptResolver,
    { provide: TranscriptStore, useClass: TypeOrmTranscriptStore },
    { provide: TranscriptObserver, useExisting: SessionReader },
  ],
  exports: [TranscriptService],
})
export class TranscriptModule {}
