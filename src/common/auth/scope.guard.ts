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
import { Authenticator, type Principal } from './authenticator.js';
import { FieldScope } from './field-scope.js';
import { missingScope } from './scope-refusal.js';

const RULE = 'scribe:scope-rule';
const ROOT_TYPES = new Set(['Query', 'Mutation', 'Subscription']);

/**
 * Where a root field's sessions come from: the argument that holds the one session's id
 * (`id`, `input.sessionId`); OWN_SESSIONS for a list its resolver limits to the caller's own
 * (callerSessionPrefix); nothing for a list of everyone's.
 */
export const OWN_SESSIONS: unique symbol = Symbol('own sessions');
type SessionsOf = string | typeof OWN_SESSIONS | undefined;

interface ScopeRule {
  scope: Scope;
  sessions: SessionsOf;
}

/**
 * What a root field needs: a scope, and where its sessions come from (see SessionsOf). The
 * scope is in the schema too, so the field check leaves a root field its caller may not run to
 * this guard.
 */
export const RequireScope = (scope: Scope, sessions?: SessionsOf) =>
  applyDecorators(SetMetadata(RULE, { scope, sessions } satisfies ScopeRule), FieldScope(scope));

/**
 * The callers the guard checked, by the GraphQL context of their request: Scribe's own record,
 * not a field of the context, which in host mode is the host's object, where the host's code
 * may keep a `principal` of its own (anything else there must never widen a list).
 */
const CHECKED = new WeakMap<object, Principal>();

/**
 * The prefix of the sessions the caller may reach, as the guard found it for this request
 * (undefined: all of them). A resolver of an OWN_SESSIONS field lists only those; with no
 * caller recorded (the guard did not run) it refuses rather than list everyone's.
 */
export function callerSessionPrefix(context: object): string | undefined {
  const principal = CHECKED.get(context);
  if (!principal) {
    throw new ScribeException(ScribeErrorCode.Forbidden, 'The caller was not checked');
  }
  return principal.sessionPrefix;
}

/**
 * Every root field of the API declares the scope it needs (a root field without one is
 * refused, so a new one cannot be left open by mistake). The caller is authenticated once per
 * request, whatever the number of fields, and recorded by its GraphQL context (callerSessionPrefix). A JWT limited to
 * a session prefix reaches only those sessions: a list only when its resolver lists its own.
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
    CHECKED.set(gql.getContext<object>(), principal);
    const prefix = principal.sessionPrefix;
    if (prefix === undefined || rule.sessions === OWN_SESSIONS) return true;
    const sessionId = rule.sessions
      ? rule.sessions
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
