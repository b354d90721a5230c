import { InvalidEnvironmentError, type Environment } from './environment.js';

export const SCOPES = ['read', 'append', 'admin'] as const;
export type Scope = (typeof SCOPES)[number];

export interface StaticToken {
  readonly token: string;
  readonly scopes: ReadonlySet<Scope>;
}

export interface JwtSettings {
  /** An HMAC secret (HS256/384/512) or a PEM public key (RS, PS or ES): never both. */
  readonly key: { kind: 'secret'; secret: string } | { kind: 'publicKey'; publicKey: string };
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
  const { jwtSecret, jwtPublicKey } = variables;
  if (jwtSecret && jwtPublicKey) {
    throw new InvalidEnvironmentError('Set JWT_SECRET or JWT_PUBLIC_KEY, not both');
  }
  const jwt: JwtSettings | undefined =
    jwtSecret || jwtPublicKey
      ? {
          key: jwtSecret
            ? { kind: 'secret', secret: jwtSecret }
            : // A PEM key in one environment line may write its newlines as \n.
              { kind: 'publicKey', publicKey: (jwtPublicKey as string).replace(/\\n/g, '\n') },
          issuer: variables.jwtIssuer,
          audience: variables.jwtAudience,
        }
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
