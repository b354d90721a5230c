import { Module } from '@nestjs/common';
import { ScribeModule } from '@scribe/server';
import { hostGraphql } from './host-graphql.js';
import { HostModule } from './host.module.js';

/**
 * 'own' mode: Scribe serves its GraphQL API on its own endpoint (/graphql); the host's fields
 * are on /host/graphql. `forRoot({ dataDir })` alone is a working Scribe: SQLite and the
 * journal under dataDir (DATA_DIR here, as the example's tests set it; ./data otherwise).
 */
@Module({
  imports: [
    ScribeModule.forRoot({ dataDir: process.env.DATA_DIR ?? './data' }),
    HostModule,
    hostGraphql('own'),
  ],
})
export class AppModule {}
