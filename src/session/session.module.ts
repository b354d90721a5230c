import { Module } from '@nestjs/common';
import { DatabaseModule } from '../database/database.module.js';
import { SessionReader } from './session-reader.js';
import { SessionResolveGate } from './session-resolve-gate.js';
import { sessionProviders } from './session.providers.js';
import { SessionUpdateResolver } from './session-update.resolver.js';
import { SessionResolver } from './session.resolver.js';

@Module({
  imports: [DatabaseModule],
  providers: [...sessionProviders, SessionReader, SessionResolver, SessionUpdateResolver],
  // For a host's own providers: the gate a session is resolved through, and the reader.
  exports: [SessionResolveGate, SessionReader],
})
export class SessionModule {}
