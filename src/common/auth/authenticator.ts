import { Inject, Injectable, Optional } from '@nestjs/common';
import { JwtService } from '@nestjs/jwt';
import { type Request } from 'express';
import { errors as joseErrors, jwtVerify } from 'jose';
import { createHash, timingSafeEqual } from 'node:crypto';
import {
  SCOPES,
  type AccessSettings,
  type JwtSettings,
  type Scope,
} from '../../config/access-settings.js';
import { ScribeConfig } from '../../config/scribe-config.js';
import { SESSION_ID_PATTERN, SESSION_ID_RULE } from '../validation/session-id.js';
import { JwksKeys } from './jwks-keys.js';
import { arrivalAddress, isLoopbackAddress } from './local-address.js';

/** Who is calling: what they may do, and the sessions they may touch. */
export interface Principal {
  readonly anonymous: boolean;
  /** For logs: `anonymous`, `token #n`, or the JWT's subject. */
  readonly who: string;
  /**
   * Who the caller is, for what it may hold (live subscriptions): `token #n`; a JWT's issuer and
   * subject, or the token itself (a digest) when it names no subject; `anonymous` for all
   * anonymous callers, whom the holder tells apart by address.
   */
  readonly key: string;
  readonly scopes: ReadonlySet<Scope>;
  /** Only sessions whose id starts with this (from a JWT's `session_prefix` claim). */
  readonly sessionPrefix: string | undefined;
  /** Epoch ms at which the credentials stop being valid (a JWT's `exp`); undefined: never. */
  readonly expiresAt?: number;
}

export type Authentication =
  { kind: 'principal'; principal: Principal } | { kind: 'refused'; reason: string };

const ALL_SCOPES: ReadonlySet<Scope> = new Set(SCOPES);
const ANONYMOUS: Principal = {
  anonymous: true,
  who: 'anonymous',
  key: 'anonymous',
  scopes: new Set<Scope>(['read', 'append']),
  sessionPrefix: undefined,
};
const HMAC_ALGORITHMS = ['HS256', 'HS384', 'HS512'] as const;
const KEY_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
] as const;

const digest = (text: string) => createHash('sha256').update(text, 'utf8').digest();

/** `admin` includes the other scopes: an operator's token can do what any client can. */
function withImplied(scopes: Iterable<Scope>): ReadonlySet<Scope> {
  const set = new Set(scopes);
  return set.has('admin') ? ALL_SCOPES : set;
}

/**
 * Turns an `Authorization` header into a principal: a static token (API_TOKENS, ADMIN_TOKEN),
 * compared in constant time against every configured one; or a JWT verified against the
 * configured key, issuer and audience, with the algorithms of that kind of key only. No header
 * is anonymous where the configuration allows it and the request came in on a loopback address;
 * a header that is not valid never is.
 */
@Injectable()
export class Authenticator {
  private readonly access: AccessSettings;
  private readonly tokens: { digest: Buffer; scopes: ReadonlySet<Scope> }[];
  private readonly jwt = new JwtService();
  private readonly byRequest = new WeakMap<Request, Promise<Authentication>>();

  constructor(
    config: ScribeConfig,
    @Optional() @Inject(JwksKeys) private readonly jwks: JwksKeys | null = null,
  ) {
    this.access = config.access;
    this.tokens = this.access.tokens.map((token) => ({
      digest: digest(token.token),
      scopes: withImplied(token.scopes),
    }));
  }

  /**
   * The request's caller, worked out once however often it is asked (before GraphQL, then by
   * each field's scope check).
   */
  forRequest(request: Request): Promise<Authentication> {
    let outcome = this.byRequest.get(request);
    if (!outcome) {
      outcome = this.authenticate(request.headers.authorization, arrivalAddress(request));
      this.byRequest.set(request, outcome);
    }
    return outcome;
  }

  /**
   * `localAddress` is the address the request arrived on (its socket's local address): an
   * anonymous caller is admitted on a loopback one only, unless ALLOW_ANONYMOUS=true.
   */
  async authenticate(header: string | undefined, localAddress?: string): Promise<Authentication> {
    if (header === undefined || header === '') {
      return this.anonymousAllowed(localAddress)
        ? { kind: 'principal', principal: ANONYMOUS }
        : { kind: 'refused', reason: 'This server needs Authorization: Bearer <token>' };
    }
    const bearer = /^Bearer +(\S+)$/i.exec(header)?.[1];
    if (bearer === undefined) {
      return { kind: 'refused', reason: 'Authorization must be Bearer <token>' };
    }
    const matched = this.matchStatic(bearer);
    if (matched !== undefined) {
      return {
        kind: 'principal',
        principal: {
          anonymous: false,
          who: `token #${matched + 1}`,
          key: `token #${matched + 1}`,
          scopes: this.tokens[matched].scopes,
          sessionPrefix: undefined,
        },
      };
    }
    if (this.access.jwt && bearer.split('.').length === 3) return this.verifyJwt(bearer);
    return { kind: 'refused', reason: 'The bearer token is not one this server accepts' };
  }

  /** Whether an anonymous caller on `localAddress` is let in. */
  private anonymousAllowed(localAddress: string | undefined): boolean {
    if (!this.access.anonymous) return false;
    return this.access.anonymousEverywhere || isLoopbackAddress(localAddress);
  }

  /** The index of the configured token equal to `bearer`; every one is compared, always. */
  private matchStatic(bearer: string): number | undefined {
    const presented = digest(bearer);
    let found: number | undefined;
    this.tokens.forEach((token, index) => {
      if (timingSafeEqual(presented, token.digest) && found === undefined) found = index;
    });
    return found;
  }

  private async verifyJwt(token: string): Promise<Authentication> {
    const settings = this.access.jwt;
    if (!settings) return { kind: 'refused', reason: 'JWTs are not accepted here' };
    if (criticalHeader(token)) {
      // RFC 7515: a `crit` extension the verifier does not understand makes the token invalid.
      return { kind: 'refused', reason: 'The bearer JWT names critical extensions (crit)' };
    }
    let claims: Record<string, unknown>;
    try {
      claims = await this.verifiedClaims(token, settings);
    } catch (error) {
      return { kind: 'refused', reason: `The bearer JWT is not valid: ${jwtRefusal(error)}` };
    }
    const prefix = claims.session_prefix;
    // A prefix no session id could start with would reach nothing: refused, as a mistake.
    if (prefix !== undefined && (typeof prefix !== 'string' || !SESSION_ID_PATTERN.test(prefix))) {
      return {
        kind: 'refused',
        reason: `The JWT claim session_prefix must be ${SESSION_ID_RULE}, as a session id's start`,
      };
    }
    return {
      kind: 'principal',
      principal: {
        anonymous: false,
        who: typeof claims.sub === 'string' ? `jwt ${claims.sub}` : 'jwt',
        key: jwtKey(claims, token),
        scopes: withImplied(scopesOf(claims)),
        sessionPrefix: prefix,
        ...(typeof claims.exp === 'number' ? { expiresAt: claims.exp * 1000 } : {}),
      },
    };
  }

  /**
   * A JWT's claims once its signature, issuer, audience and times check out: against the
   * secret or public key with jsonwebtoken (through @nestjs/jwt), or against the provider's
   * rotating keys with jose (JwksKeys), whose local key set takes RS, PS and ES keys only.
   */
  private async verifiedClaims(
    token: string,
    settings: JwtSettings,
  ): Promise<Record<string, unknown>> {
    const { key, issuer, audience } = settings;
    if (key.kind === 'jwks') {
      if (!this.jwks) throw new Error('The key set is not loaded');
      const { payload } = await jwtVerify(token, this.jwks.getKey, {
        algorithms: [...KEY_ALGORITHMS],
        ...(issuer !== undefined ? { issuer } : {}),
        ...(audience !== undefined ? { audience } : {}),
      });
      return payload;
    }
    return this.jwt.verifyAsync<Record<string, unknown>>(token, {
      ...(key.kind === 'secret'
        ? { secret: key.secret, algorithms: [...HMAC_ALGORITHMS] }
        : { publicKey: key.publicKey, algorithms: [...KEY_ALGORITHMS] }),
      ...(issuer !== undefined ? { issuer } : {}),
      ...(audience !== undefined ? { audience } : {}),
    });
  }
}

/** The verifier's own refusals (a bad signature, an expired token, a wrong audience). */
const JWT_ERRORS = new Set(['JsonWebTokenError', 'TokenExpiredError', 'NotBeforeError']);

/**
 * Why a JWT was refused, in the verifier's words when they are its own. Anything else (a
 * SyntaxError from a payload that is not JSON) quotes the client's bytes, so it is not repeated
 * to the logs or the client.
 */
function jwtRefusal(error: unknown): string {
  if (error instanceof Error && JWT_ERRORS.has(error.name)) return error.message;
  // jose's words are its own too (`"exp" claim timestamp check failed`, no key matched).
  if (error instanceof joseErrors.JOSEError) return error.message;
  return error instanceof SyntaxError ? 'its header or payload is not JSON' : 'invalid';
}

/**
 * A JWT's holder: its issuer and subject, however many tokens they are given; a token without a
 * subject names nobody but its bearer, and is its own key: its signed part (header and
 * claims), which its signature fixes. Not the whole text: an RS or PS signature's last
 * base64url character has unused bits, so one token has 16 spellings that all verify.
 */
function jwtKey(claims: Record<string, unknown>, token: string): string {
  if (typeof claims.sub === 'string' && claims.sub !== '') {
    return `jwt ${JSON.stringify([typeof claims.iss === 'string' ? claims.iss : null, claims.sub])}`;
  }
  const signed = token.slice(0, token.lastIndexOf('.'));
  return `jwt token ${digest(signed).toString('base64url')}`;
}

/** Whether the JWT's header carries `crit`; an unreadable header is left to verify, which refuses it. */
function criticalHeader(token: string): boolean {
  try {
    const header: unknown = JSON.parse(Buffer.from(token.split('.')[0], 'base64url').toString());
    return typeof header === 'object' && header !== null && 'crit' in header;
  } catch {
    return false;
  }
}

/** OAuth's space-separated `scope`, or a `scopes` array; unknown scopes are ignored. */
function scopesOf(claims: Record<string, unknown>): Scope[] {
  const raw =
    typeof claims.scope === 'string'
      ? claims.scope.split(' ')
      : Array.isArray(claims.scopes)
        ? claims.scopes
        : [];
  return raw.filter((scope): scope is Scope => (SCOPES as readonly unknown[]).includes(scope));
}
