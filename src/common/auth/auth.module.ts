import { Global, Module } from '@nestjs/common';
import { APP_GUARD, APP_INTERCEPTOR } from '@nestjs/core';
import { AuthFailureLog } from './auth-failure-log.js';
import { Authenticator } from './authenticator.js';
import { NonReaderRefusalsInterceptor } from './non-reader-refusals.interceptor.js';
import { ScopeGuard } from './scope.guard.js';
import { RefusalBudget } from '../http/refusal-budget.js';
import { ScribeConfig } from '../../config/scribe-config.js';

/**
 * Who is calling (Authenticator), what each root field needs (ScopeGuard), what a caller
 * without `read` is told (NonReaderRefusalsInterceptor), and the refusal log.
 */
@Global()
@Module({
  providers: [
    Authenticator,
    { provide: AuthFailureLog, useFactory: () => new AuthFailureLog() },
    { provide: APP_GUARD, useClass: ScopeGuard },
    { provide: APP_INTERCEPTOR, useClass: NonReaderRefusalsInterceptor },
    // One budget per instance, whichever way a request comes in: HTTP or a WebSocket.
    {
      provide: RefusalBudget,
      inject: [ScribeConfig],
      useFactory: (config: ScribeConfig) => new RefusalBudget(config.maxRefusalsPerMinute),
    },
  ],
  exports: [Authenticator, AuthFailureLog, RefusalBudget],
})
export class AuthModule {}
