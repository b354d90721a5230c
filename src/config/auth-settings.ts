import { IsIn, IsOptional, IsString } from 'class-validator';
import { HttpSettings } from './http-settings.js';

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
