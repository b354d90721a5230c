import { Module } from '@nestjs/common';
import { ScribeModule } from '@scribe/server';
import { hostGraphql } from './host-graphql.js';
import { HostModule } from './host.module.js';

/**
 * 'host' mode: the host's GraphQLModule serves one schema with the host's fields and Scribe's
 * (Scribe's checks still apply to Scribe's fields only). Options come from a factory here, as a
 * host reading its own configuration service would give them.
 */
@Module({
  imports: [
    ScribeModule.forRootAsync({
      useFactory: () => ({ dataDir: process.env.DATA_DIR ?? './data' }),
      graphql: { mode: 'host' },
    }),
    HostModule,
    hostGraphql('host'),
  ],
})
export class AppHostModeModule {}
