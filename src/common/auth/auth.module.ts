import { Global, Module } from '@nestjs/common';
import { AuthFailureLog } from './auth-failure-log.js';
import { Authenticator } from './authenticator.js';
import { JwksKeys } from './jwks-keys.js';
import { RefusalBudget } from '../http/refusal-budget.js';
import { ScribeConfig } from '../../config/scribe-config.js';

/**
 * Who is calling (Authenticator), and the refusal log. What each root field needs (ScopeGuard)
 * and what a caller without `read` is told (NonReaderRefusalsInterceptor) are applied by
 * ScribeResolver, to Scribe's resolvers only.
 */
@Global()
@Module({
  providers: [
    Authenticator,
    // An OIDC provider's keys, fetched at start (the start fails without them): only with
    // JWT_JWKS_URL; null otherwise, which Authenticator takes as no key set.
    {
      provide: JwksKeys,
      inject: [ScribeConfig],
      useFactory: (config: ScribeConfig) => {
        const key = config.access.jwt?.key;
        return key?.kind === 'jwks' ? new JwksKeys(key) : null;
      },
    },
    { provide: AuthFailureLog, useFactory: () => new AuthFailureLog() },
    // One budget per instance, whichever way a request comes in: HTTP or a WebSocket.
    {
      provide: RefusalBudget,
      inject: [ScribeConfig],
      useFactory: (config: ScribeConfig) => new RefusalBudget(config.maxRefusalsPerMinute),
    },
  ],
  exports: [Authenticator, AuthFailureLog, RefusalBudget, JwksKeys],
})
export class AuthModule {}
