import { Module } from '@nestjs/common';
import { AppendIntake } from './append-intake.js';

/**
 * The one AppendIntake, for the write path that closes it and the probes that read it: both
 * import this module, neither the other.
 */
@Module({ providers: [AppendIntake], exports: [AppendIntake] })
export class AppendIntakeModule {}
