import { IsIn, IsInt, IsOptional, IsString, Max, Min } from 'class-validator';
import { HttpSettings } from './http-settings.js';

/** The variables of AuthSettings that are whole numbers, read from plain decimal digits. */
export const AUTH_INTEGERS = ['JWT_JWKS_COOLDOWN_MS'] as const;

/** Who may call: the admin and static tokens, the JWT keys, and anonymous callers. */
export class AuthSettings extends HttpSettings {
  @IsOptional()
  @IsString()
  ADMIN_TOKEN?: string;

  /** Static bearer tokens and their scopes: `k1=read+append,k2=read,ops=admin`. */
  @IsOptional()
  @IsString()
  API_TOKENS?: string;

  /** HMAC secret that signs accepted JWTs (HS256/384/512). */
  @IsOptional()
  @IsString()
  JWT_SECRET?: string;

  /** PEM public key that verifies accepted JWTs (RS, PS or ES algorithms). */
  @IsOptional()
  @IsString()
  JWT_PUBLIC_KEY?: string;

  /** An OIDC provider's JSON Web Key Set (https), whose keys verify accepted JWTs and rotate. */
  @IsOptional()
  @IsString()
  JWT_JWKS_URL?: string;

  /** How soon after a fetch of JWT_JWKS_URL a JWT naming an unknown key may fetch it again. */
  @IsInt()
  @Min(100)
  @Max(3_600_000)
  JWT_JWKS_COOLDOWN_MS = 30_000;

  @IsOptional()
  @IsString()
  JWT_ISSUER?: string;

  @IsOptional()
  @IsString()
  JWT_AUDIENCE?: string;

  /** Lets anonymous callers in on a non-loopback HOST when no token is configured. */
  @IsIn(['true', 'false'])
  ALLOW_ANONYMOUS: 'true' | 'false' = 'false';
}
