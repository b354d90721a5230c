import { Query, Resolver } from '@nestjs/graphql';
import { RequireScope } from '../common/auth/scope.guard.js';
import { SpoolStatus } from './models/spool-status.model.js';
import { SpoolService } from './spool.service.js';

@Resolver()
export class SpoolResolver {
  constructor(private readonly spool: SpoolService) {}

  @Query(() => SpoolStatus, {
    description:
      'Admin: the on-disk spool of this instance. Needs a token with the admin scope (ADMIN_TOKEN, or API_TOKENS or a JWT granting admin).',
  })
  @RequireScope('admin')
  spoolStatus(): Promise<SpoolStatus> {
    return this.spool.status();
  }
}
