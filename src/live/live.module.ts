import { Module } from '@nestjs/common';
import { DatabaseModule } from '../database/database.module.js';
import { ConnectionGuard } from './connection-guard.js';
import { LiveChannels } from './live-channels.js';
import { LiveResolver } from './live.resolver.js';
import { LiveSocketServer } from './live-socket-server.js';
import { liveProviders } from './live.providers.js';

/** Live subscriptions: graphql-ws on /graphql, fed by the commits of every instance. */
@Module({
  imports: [DatabaseModule],
  providers: [...liveProviders, LiveChannels, LiveResolver, LiveSocketServer, ConnectionGuard],
})
export class LiveModule {}
