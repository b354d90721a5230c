import { Module } from '@nestjs/common';
import { HelloResolver } from './hello.resolver.js';
import { NotesService } from './notes.service.js';

/**
 * The host's feature: its resolver and the service that injects Scribe's TranscriptService
 * (ScribeModule.forRoot makes Scribe's services available app-wide, as TypeOrmModule does).
 */
@Module({
  providers: [HelloResolver, NotesService],
  exports: [NotesService],
})
export class HostModule {}
