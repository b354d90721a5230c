import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { MessageEntity } from '../transcript/entities/message.entity.js';
import { SessionEntity } from './entities/session.entity.js';
import { SessionReader } from './session-reader.js';
import { SessionResolver } from './session.resolver.js';
import { SessionService } from './session.service.js';

@Module({
  imports: [TypeOrmModule.forFeature([SessionEntity, MessageEntity])],
  providers: [SessionService, SessionReader, SessionResolver],
  exports: [SessionReader],
})
export class SessionModule {}
