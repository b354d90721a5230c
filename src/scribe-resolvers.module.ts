import { Module } from '@nestjs/common';
import { DatabaseModule } from './database/database.module.js';
import { LiveModule } from './live/live.module.js';
import { SessionModule } from './session/session.module.js';
import { SpoolModule } from './spool/spool.module.js';
import { TranscriptModule } from './transcript/transcript.module.js';
import { SCHEMA_RESOLVERS } from './graphql-resolvers.js';

/**
 * Scribe's resolvers, in a module of their own that no global module imports. Why: Nest's
 * GraphQLModule `include` takes a module's imports transitively, and every module imports the
 * global ones; with the resolvers in Scribe's global modules, a host's own endpoint with
 * `include: [HostModule]` served Scribe's fields too (unguarded by Scribe's plugins).
 */
@Module({
  imports: [DatabaseModule, SessionModule, TranscriptModule, SpoolModule, LiveModule],
  providers: SCHEMA_RESOLVERS,
})
export class ScribeResolversModule {}
