import {
  Injectable,
  SetMetadata,
  applyDecorators,
  type CanActivate,
  type ExecutionContext,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { GqlExecutionContext, type GqlContextType } from '@nestjs/graphql';
import { type Request } from 'express';
import { type Scope } from '../../config/access-settings.js';
import { ScribeErrorCode } from '../errors/scribe-error-code.js';
import { ScribeException } from '../errors/scribe.exception.js';
import { Authenticator } from './authenticator.js';
import { FieldScope } from './field-scope.js';
import { missingScope } from './scope-refusal.js';

const RULE = 'scribe:scope-rule';
const ROOT_TYPES = new Set(['Query', 'Mutation', 'Subscription']);

interface ScopeRule {
  scope: Scope;
  /** Where the session id is in the arguments (`id`, `input.sessionId`); absent for lists. */
  sessionArgument?: string;
}

/**
 * What a root field needs: a scope, and for one session, where its id is. The scope is in the
 * schema too, so the field check leaves a root field its caller may not run to this guard.
 */
export const RequireScope = (scope: Scope, sessionArgument?: string) =>
  applyDecorators(
    SetMetadata(RULE, { scope, sessionArgument } satisfies ScopeRule),
    FieldScope(scope),
  );

/**
 * Every root field of the API declares the scope it needs (a root field without one is
 * refused, so a new one cannot be left open by mistake). The caller is authenticated once per
 * request, whatever the number of fields. A JWT limited to a session prefix reaches only those
 * sessions, and no list.
 */
@Injectable()
export class ScopeGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly authenticator: Authenticator,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType<GqlContextType>() !== 'graphql') return true;
    const gql = GqlExecutionContext.create(context);
    const info = gql.getInfo<{ parentType: { name: string }; fieldName: string }>();
    const rule = this.reflector.get<ScopeRule | undefined>(RULE, context.getHandler());
    if (!rule) {
      if (!ROOT_TYPES.has(info.parentType.name)) return true;
      throw new ScribeException(ScribeErrorCode.Forbidden, `${info.fieldName} declares no scope`);
    }
    const outcome = await this.authenticator.forRequest(gql.getContext<{ req: Request }>().req);
    if (outcome.kind === 'refused') {
      throw new ScribeException(ScribeErrorCode.Unauthenticated, outcome.reason);
    }
    const { principal } = outcome;
    if (!principal.scopes.has(rule.scope)) {
      throw missingScope(principal, info.fieldName, rule.scope);
    }
    const prefix = principal.sessionPrefix;
    if (prefix === undefined) return true;
    const sessionId = rule.sessionArgument
      ? rule.sessionArgument
          .split('.')
          .reduce<unknown>(
            (value, key) => (value as Record<string, unknown> | undefined)?.[key],
            gql.getArgs(),
          )
      : undefined;
    if (typeof sessionId !== 'string' || !sessionId.startsWith(prefix)) {
      throw new ScribeException(
        ScribeErrorCode.Forbidden,
        `${info.fieldName}: this caller may only reach sessions whose id starts with "${prefix}"`,
      );
    }
    return true;
  }
}
