import { Module } from '@nestjs/common';
import { DatabaseModule } from '../database/database.module.js';
import { ConnectionGuard } from './connection-guard.js';
import { LiveChannels } from './live-channels.js';
import { LiveOperations } from './live-operations.js';
import { LiveSocketServer } from './live-socket-server.js';
import { liveProviders } from './live.providers.js';
import { OpenConnections } from './open-connections.js';

/** Live subscriptions: graphql-ws on /graphql, fed by the commits of every instance. */
@Module({
  imports: [DatabaseModule],
  providers: [
    ...liveProviders,
    LiveChannels,
    LiveSocketServer,
    LiveOperations,
    OpenConnections,
    ConnectionGuard,
  ],
  // For LiveResolver, which is ScribeResolversModule's (see there why).
  exports: [LiveChannels],
})
export class LiveModule {}
