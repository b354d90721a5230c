import {
  Injectable,
  type CallHandler,
  type ExecutionContext,
  type NestInterceptor,
} from '@nestjs/common';
import { GqlExecutionContext, type GqlContextType } from '@nestjs/graphql';
import { catchError, from, mergeMap, type Observable } from 'rxjs';
import { ScribeException } from '../errors/scribe.exception.js';
import { type GraphQLContext } from '../graphql/graphql-context.js';
import { Authenticator } from './authenticator.js';

/**
 * Answers a caller without `read` the refusal it may see (ScribeException.toNonReaders): an
 * append-only token must not learn a session's revision, whether it exists, or which field of
 * a message it guessed wrong. The caller's outcome is the request's cached one.
 */
@Injectable()
export class NonReaderRefusalsInterceptor implements NestInterceptor {
  constructor(private readonly authenticator: Authenticator) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType<GqlContextType>() !== 'graphql') return next.handle();
    const { req } = GqlExecutionContext.create(context).getContext<GraphQLContext>();
    return next.handle().pipe(
      catchError((error: unknown) => {
        if (!(error instanceof ScribeException) || !error.toNonReaders) throw error;
        const blind = error.toNonReaders;
        return from(this.authenticator.forRequest(req)).pipe(
          mergeMap((outcome) => {
            const reads = outcome.kind === 'principal' && outcome.principal.scopes.has('read');
            throw reads ? error : blind;
          }),
        );
      }),
    );
  }
}
