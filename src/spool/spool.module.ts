import { Module } from '@nestjs/common';
import { SpoolResolver } from './spool.resolver.js';
import { SpoolService } from './spool.service.js';

@Module({
  providers: [SpoolService, SpoolResolver],
  exports: [SpoolService],
})
export class SpoolModule {}
