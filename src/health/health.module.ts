import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { AppendIntakeModule } from '../common/lifecycle/append-intake.module.js';
import { DatabaseModule } from '../database/database.module.js';
import { SpoolModule } from '../spool/spool.module.js';
import { HealthController } from './health.controller.js';

/**
 * The probes. They read the database's state and heartbeat through DatabaseHealth, the journal
 * through SpoolService, and whether appends are accepted through AppendIntake: never the write
 * path itself (whose writer DatabaseHealth's heartbeat goes through, when it is there).
 */
@Module({
  imports: [TerminusModule, DatabaseModule, SpoolModule, AppendIntakeModule],
  controllers: [HealthController],
})
export class HealthModule {}
