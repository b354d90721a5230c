import { Global, Module } from '@nestjs/common';
import { DatabaseIdentity } from './database/database-identity.js';
import { DatabaseModule } from './database/database.module.js';
import { SpoolDatabase } from './spool/database-binding-rules.js';

/**
 * The journal learns which database it journals for (see DatabaseBinding) without knowing the
 * database layer: the composition root hands it database/'s DatabaseIdentity.
 */
@Global()
@Module({
  imports: [DatabaseModule],
  providers: [{ provide: SpoolDatabase, useExisting: DatabaseIdentity }],
  exports: [SpoolDatabase],
})
export class SpoolDatabaseModule {}
