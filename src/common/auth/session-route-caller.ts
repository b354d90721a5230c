import { type Request } from 'express';
import { ScribeErrorCode } from '../errors/scribe-error-code.js';
import { ScribeException } from '../errors/scribe.exception.js';
import { SESSION_ID_PATTERN, SESSION_ID_RULE } from '../validation/session-id.js';
import { type Scope } from '../../config/access-settings.js';
import { type Authenticator, type Principal } from './authenticator.js';
import { missingScope } from './scope-refusal.js';

/**
 * The caller of a session's plain HTTP route (its export, its import), checked as ScopeGuard
 * checks a GraphQL field's, before the arguments: credentials first (Authenticator keeps one
 * outcome per request, which credentialsFirst found already), then `scope`, then a JWT's
 * session prefix, then the id. A ScribeException for the first that fails.
 */
export async function sessionRouteCaller(
  authenticator: Authenticator,
  request: Request,
  id: string,
  route: string,
  scope: Scope,
): Promise<Principal> {
  const outcome = await authenticator.forRequest(request);
  if (outcome.kind === 'refused') {
    throw new ScribeException(ScribeErrorCode.Unauthenticated, outcome.reason);
  }
  const principal = outcome.principal;
  if (!principal.scopes.has(scope)) throw missingScope(principal, route, scope);
  const prefix = principal.sessionPrefix;
  if (prefix !== undefined && !id.startsWith(prefix)) {
    throw new ScribeException(
      ScribeErrorCode.Forbidden,
      `${route}: this caller may only reach sessions whose id starts with "${prefix}"`,
    );
  }
  if (!SESSION_ID_PATTERN.test(id)) {
    throw ScribeException.invalidInput('id', `must be ${SESSION_ID_RULE}`);
  }
  return principal;
}
