import { UseGuards } from '@nestjs/common';
import { Query, Resolver } from '@nestjs/graphql';
import { AdminTokenGuard } from '../common/auth/admin-token.guard.js';
import { SpoolStatus } from './models/spool-status.model.js';
import { SpoolService } from './spool.service.js';

@Resolver()
export class SpoolResolver {
  constructor(private readonly spool: SpoolService) {}

  @Query(() => SpoolStatus, {
    description:
      'Admin: the on-disk spool of this instance. Needs Authorization: Bearer <ADMIN_TOKEN>.',
  })
  @UseGuards(AdminTokenGuard)
  spoolStatus(): Promise<SpoolStatus> {
    return this.spool.status();
  }
}
