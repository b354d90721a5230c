import { Module } from '@nestjs/common';
import { DatabaseModule } from '../database/database.module.js';
import { SessionReader } from './session-reader.js';
import { sessionProviders } from './session.providers.js';
import { SessionUpdateResolver } from './session-update.resolver.js';
import { SessionResolver } from './session.resolver.js';

@Module({
  imports: [DatabaseModule],
  providers: [...sessionProviders, SessionReader, SessionResolver, SessionUpdateResolver],
})
export class SessionModule {}
