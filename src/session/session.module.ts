import { Module } from '@nestjs/common';
import { DatabaseModule } from '../database/database.module.js';
import { SessionReader } from './session-reader.js';
import { SessionUpdateResolver } from './session-update.resolver.js';
import { SessionResolver } from './session.resolver.js';

@Module({
  imports: [DatabaseModule],
  providers: [SessionReader, SessionResolver, SessionUpdateResolver],
})
export class SessionModule {}
