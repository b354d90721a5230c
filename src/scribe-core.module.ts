import { Module } from '@nestjs/common';

/**
 * Scribe's services, global: a host's providers inject TranscriptService, SpoolService,
 * SessionResolveGate and ScribeGraphQL without importing anything. ScribeModule assembles it
 * (see ScribeModule.forRoot); Scribe's resolvers stay outside it (ScribeResolversModule).
 */
@Module({})
export class ScribeCoreModule {}
