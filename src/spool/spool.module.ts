import { Module } from '@nestjs/common';
import { SpoolService } from './spool.service.js';

@Module({
  providers: [SpoolService],
  exports: [SpoolService],
})
export class SpoolModule {}
