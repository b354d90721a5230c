import { type Environment } from './environment.js';
import { InvalidEnvironmentError } from './invalid-environment.error.js';

export const SCOPES = ['read', 'append', 'admin'] as const;
export type Scope = (typeof SCOPES)[number];

export interface StaticToken {
  readonly token: string;
  readonly scopes: ReadonlySet<Scope>;
}

/**
 * What verifies a JWT, one of: an HMAC secret (HS256/384/512), a PEM public key (RS, PS or ES),
 * or an OIDC provider's key set at a URL (RS, PS or ES keys, rotating), fetched again at most
 * once per `cooldownMs` for a token naming a key it does not hold.
 */
export type JwtKey =
  | { kind: 'secret'; secret: string }
  | { kind: 'publicKey'; publicKey: string }
  | { kind: 'jwks'; url: string; cooldownMs: number };

export interface JwtSettings {
  readonly key: JwtKey;
  readonly issuer: string | undefined;
  readonly audience: string | undefined;
}

/** Who may call the API: static tokens, JWTs, and whether anonymous callers may. */
export interface AccessSettings {
  readonly tokens: readonly StaticToken[];
  readonly jwt: JwtSettings | undefined;
  /**
   * Anonymous callers get `read` and `append`: only with no token or key configured, and only
   * over a request that arrived on a loopback address (Authenticator decides per request).
   */
  readonly anonymous: boolean;
  /** Anonymous on a non-loopback HOST, because ALLOW_ANONYMOUS=true said so (warned at start). */
  readonly anonymousForced: boolean;
  /** ALLOW_ANONYMOUS=true with nothing configured: anonymous whatever address a request is on. */
  readonly anonymousEverywhere: boolean;
}

export interface AccessVariables {
  apiTokens: string | undefined;
  adminToken: string | undefined;
  jwtSecret: string | undefined;
  jwtPublicKey: string | undefined;
  jwtJwksUrl: string | undefined;
  jwtJwksCooldownMs: number;
  jwtIssuer: string | undefined;
  jwtAudience: string | undefined;
  allowAnonymous: boolean;
  /** Where the server listens; undefined: a host's own listener, not checked here. */
  host: string | undefined;
}

/** The access variables of a validated environment, empty strings as unset. */
export function accessVariablesOf(
  environment: Environment,
  host: string | undefined,
): AccessVariables {
  return {
    apiTokens: environment.API_TOKENS || undefined,
    adminToken: environment.ADMIN_TOKEN || undefined,
    jwtSecret: environment.JWT_SECRET || undefined,
    jwtPublicKey: environment.JWT_PUBLIC_KEY || undefined,
    jwtJwksUrl: environment.JWT_JWKS_URL || undefined,
    jwtJwksCooldownMs: environment.JWT_JWKS_COOLDOWN_MS,
    jwtIssuer: environment.JWT_ISSUER || undefined,
    jwtAudience: environment.JWT_AUDIENCE || undefined,
    allowAnonymous: environment.ALLOW_ANONYMOUS === 'true',
    host,
  };
}

/** `k1=read+append,k2=read,ops=admin`: a token, `=`, its scopes joined by `+`. */
export function parseApiTokens(text: string): StaticToken[] {
  const tokens: StaticToken[] = [];
  for (const entry of text.split(',')) {
    const trimmed = entry.trim();
    if (trimmed === '') continue;
    const match = /^([^=\s]+)=([a-z+]+)$/.exec(trimmed);
    if (!match) {
      throw new InvalidEnvironmentError(
        'API_TOKENS must be a comma list of token=scopes, scopes joined by + (e.g. k1=read+append,ops=admin)',
      );
    }
    const scopes = match[2].split('+');
    const unknown = scopes.find((scope) => !(SCOPES as readonly string[]).includes(scope));
    if (unknown !== undefined) {
      throw new InvalidEnvironmentError(
        `API_TOKENS names an unknown scope "${unknown}"; scopes are ${SCOPES.join(', ')}`,
      );
    }
    if (tokens.some((known) => known.token === match[1])) {
      throw new InvalidEnvironmentError('API_TOKENS lists one token twice');
    }
    tokens.push({ token: match[1], scopes: new Set(scopes as Scope[]) });
  }
  return tokens;
}

export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/**
 * Who may call, from the environment. Refuses (one line, naming the way out) an instance that
 * would let anyone who reaches a non-loopback address read and write every session.
 */
export function accessSettings(variables: AccessVariables): AccessSettings {
  const tokens = variables.apiTokens ? parseApiTokens(variables.apiTokens) : [];
  const key = jwtKeyOf(variables);
  const jwt: JwtSettings | undefined = key
    ? { key, issuer: variables.jwtIssuer, audience: variables.jwtAudience }
    : undefined;
  const configured = tokens.length > 0 || jwt !== undefined;
  const loopback = variables.host === undefined || isLoopback(variables.host);
  if (!configured && !loopback && !variables.allowAnonymous) {
    throw new InvalidEnvironmentError(
      `HOST=${variables.host} is not a loopback address and neither API_TOKENS nor a JWT key is set: anyone reaching the port could read and write every session. Configure tokens, or set ALLOW_ANONYMOUS=true to accept that`,
    );
  }
  if (variables.adminToken) {
    tokens.push({ token: variables.adminToken, scopes: new Set<Scope>(['admin']) });
  }
  return {
    tokens,
    jwt,
    anonymous: !configured,
    anonymousForced: !configured && !loopback,
    anonymousEverywhere: !configured && variables.allowAnonymous,
  };
}

/** The one JWT key the variables name, if any. */
function jwtKeyOf(variables: AccessVariables): JwtKey | undefined {
  const { jwtSecret, jwtPublicKey, jwtJwksUrl } = variables;
  if ([jwtSecret, jwtPublicKey, jwtJwksUrl].filter(Boolean).length > 1) {
    throw new InvalidEnvironmentError('Set one of JWT_SECRET, JWT_PUBLIC_KEY or JWT_JWKS_URL');
  }
  if (jwtSecret) return { kind: 'secret', secret: jwtSecret };
  // A PEM key in one environment line may write its newlines as \n.
  if (jwtPublicKey) return { kind: 'publicKey', publicKey: jwtPublicKey.replace(/\\n/g, '\n') };
  if (jwtJwksUrl) {
    // A provider signs tokens for all its clients and APIs with the keys of one set: without
    // both checks, any token it issued for anything would be taken as one for Scribe.
    if (!variables.jwtIssuer || !variables.jwtAudience) {
      throw new InvalidEnvironmentError(
        "JWT_JWKS_URL needs JWT_ISSUER and JWT_AUDIENCE (the provider's issuer and this API's audience): a provider's keys sign tokens for all its clients",
      );
    }
    return { kind: 'jwks', url: jwksUrlOf(jwtJwksUrl), cooldownMs: variables.jwtJwksCooldownMs };
  }
  return undefined;
}

/**
 * JWT_JWKS_URL as a URL: https, or http to a loopback address only (a provider on this
 * machine), since whoever can change the keys on the way can sign any token.
 */
function jwksUrlOf(text: string): string {
  let url: URL | undefined;
  try {
    url = new URL(text);
  } catch {
    url = undefined;
  }
  const host = url?.hostname.replace(/^\[|\]$/g, '');
  const secure =
    url?.protocol === 'https:' || (url?.protocol === 'http:' && isLoopback(host ?? ''));
  if (!url || !secure || url.username !== '' || url.password !== '') {
    throw new InvalidEnvironmentError(
      `JWT_JWKS_URL must be an https:// URL (http:// only to a loopback address), without credentials; got ${JSON.stringify(text)}`,
    );
  }
  return url.href;
}
