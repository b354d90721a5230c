import { Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { GqlExecutionContext } from '@nestjs/graphql';
import { timingSafeEqual } from 'node:crypto';
import { ScribeConfig } from '../../config/scribe-config.js';
import { ScribeErrorCode } from '../errors/scribe-error-code.js';
import { ScribeException } from '../errors/scribe.exception.js';

/**
 * Admin queries need `Authorization: Bearer <ADMIN_TOKEN>`. A missing or wrong token, or no
 * token configured at all, is UNAUTHENTICATED.
 */
@Injectable()
export class AdminTokenGuard implements CanActivate {
  constructor(private readonly config: ScribeConfig) {}

  canActivate(context: ExecutionContext): boolean {
    const request = GqlExecutionContext.create(context).getContext<{
      req?: { headers?: Record<string, string | string[] | undefined> };
    }>().req;
    const header = request?.headers?.authorization;
    const presented = typeof header === 'string' ? /^Bearer (.+)$/i.exec(header)?.[1] : undefined;
    if (!this.config.adminToken || !presented || !sameSecret(presented, this.config.adminToken)) {
      throw new ScribeException(
        ScribeErrorCode.Unauthenticated,
        'Admin queries need Authorization: Bearer <ADMIN_TOKEN>',
      );
    }
    return true;
  }
}

function sameSecret(presented: string, expected: string): boolean {
  const a = Buffer.from(presented);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
