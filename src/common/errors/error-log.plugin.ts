import { type ApolloServerPlugin } from '@apollo/server';
import { Logger } from '@nestjs/common';
import { unwrapResolverError } from '@apollo/server/errors';
import { type GraphQLContext } from '../graphql/graphql-context.js';
import { describeError } from './describe-error.js';
import { errorKind } from './graphql-error.util.js';
import { LogRateLimit } from './log-rate-limit.js';

type ErrorLogger = Pick<Logger, 'error' | 'warn' | 'debug'>;

/**
 * The one place a GraphQL request's errors are logged, so that abuse stays quiet and faults
 * stay loud: what a client got wrong is logged at debug without a stack; a refused token at
 * WARN, once per request and at most once a minute per source address; a fault of the
 * server's own at ERROR with its stack, once.
 */
export function errorLogPlugin(
  logger: ErrorLogger = new Logger('GraphQLErrors'),
  authLimit = new LogRateLimit(60_000, 10),
): ApolloServerPlugin<GraphQLContext> {
  return {
    requestDidStart: () =>
      Promise.resolve({
        didEncounterErrors: ({ errors, contextValue }) => {
          let unauthenticated: string | undefined;
          let refused: string | undefined;
          for (const error of errors) {
            const kind = errorKind(error);
            const original = unwrapResolverError(error);
            if (kind === 'fault') {
              logger.error(
                `Unhandled error at ${error.path?.join('.') ?? 'request'}: ${describeError(original)}`,
                original instanceof Error ? original.stack : undefined,
              );
            } else if (kind === 'unauthenticated') {
              unauthenticated ??= describeError(original);
            } else {
              refused ??= `${error.path?.join('.') ?? 'request'}: ${error.message}`;
            }
          }
          if (refused !== undefined) {
            const more = errors.length > 1 ? ` (${errors.length} errors in all)` : '';
            logger.debug(`Refused ${refused}${more}`);
          }
          if (unauthenticated === undefined) return Promise.resolve();
          const source = contextValue.req?.ip ?? contextValue.req?.socket?.remoteAddress ?? '?';
          const turn = authLimit.take(source);
          if (turn.write) {
            const held =
              turn.suppressed > 0 ? ` (${turn.suppressed} more since the last line)` : '';
            logger.warn(`Unauthenticated request from ${source}: ${unauthenticated}${held}`);
          }
          return Promise.resolve();
        },
      }),
  };
}
