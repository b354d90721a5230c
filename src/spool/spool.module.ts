import { Module } from '@nestjs/common';
import { BlockedFiles } from './blocked-files.js';
import { JournalIndex } from './journal-index.js';
import { Journal } from './journal.js';
import { SetAsideActions } from './set-aside-actions.js';
import { spoolProviders } from './spool.providers.js';
import { SpoolService } from './spool.service.js';
import { SPOOL_DIRECTORY } from './spool.tokens.js';

@Module({
  // Its resolver is ScribeResolversModule's (see there why).
  providers: [...spoolProviders, SpoolService, SetAsideActions],
  // Journal and JournalIndex: the write path's own calls (release, drain, what is on disk);
  // BlockedFiles: /health's count.
  exports: [SpoolService, SetAsideActions, Journal, JournalIndex, BlockedFiles, SPOOL_DIRECTORY],
})
export class SpoolModule {}
