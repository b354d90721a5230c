import { Module } from '@nestjs/common';
import { DatabaseModule } from '../database/database.module.js';
import { SessionReader } from './session-reader.js';
import { SessionResolveGate } from './session-resolve-gate.js';
import { sessionProviders } from './session.providers.js';

@Module({
  imports: [DatabaseModule],
  // Its resolvers are ScribeResolversModule's (see there why).
  providers: [...sessionProviders, SessionReader],
  // For a host's own providers: the gate a session is resolved through, and the reader.
  exports: [SessionResolveGate, SessionReader],
})
export class SessionModule {}
