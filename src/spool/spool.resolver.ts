import { Query } from '@nestjs/graphql';
import { ScribeResolver } from '../common/graphql/scribe-resolver.js';
import { RequireScope } from '../common/auth/scope.guard.js';
import { SpoolStatus } from './models/spool-status.model.js';
import { SpoolService } from './spool.service.js';

@ScribeResolver()
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
