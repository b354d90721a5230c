import { Global, Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { AuthFailureLog } from './auth-failure-log.js';
import { Authenticator } from './authenticator.js';
import { ScopeGuard } from './scope.guard.js';

/** Who is calling (Authenticator), what each field needs (ScopeGuard), and the refusal log. */
@Global()
@Module({
  providers: [
    Authenticator,
    { provide: AuthFailureLog, useFactory: () => new AuthFailureLog() },
    { provide: APP_GUARD, useClass: ScopeGuard },
  ],
  exports: [Authenticator, AuthFailureLog],
})
export class AuthModule {}
