import { type ApolloServerPlugin } from '@apollo/server';
import { Logger } from '@nestjs/common';
import { type GraphQLContext } from '../graphql/graphql-context.js';
import { describeError } from './describe-error.js';
import { errorKind, originalOf, refusesClient } from './graphql-error.util.js';
import { type AuthFailureLog } from '../auth/auth-failure-log.js';
import { markRefused } from '../http/refusal-gate.js';
import { sourceOf } from '../http/source-address.js';

type ErrorLogger = Pick<Logger, 'error' | 'debug'>;

/**
 * The one place a GraphQL request's errors are logged, so that abuse stays quiet and faults
 * stay loud: what a client got wrong is logged at debug without a stack; refused credentials
 * once per request, through the rate-limited AuthFailureLog; a fault of the server's own at
 * ERROR with its stack, once.
 */
/** Also marks a request whose errors refuse what its client sent (refusesClient), so that its
 * source's refusal budget pays for it however it is answered. */
export function errorLogPlugin(
  refusals: Pick<AuthFailureLog, 'refused'>,
  logger: ErrorLogger = new Logger('GraphQLErrors'),
): ApolloServerPlugin<GraphQLContext> {
  return {
    requestDidStart: () =>
      Promise.resolve({
        didEncounterErrors: ({ errors, contextValue }) => {
          let unauthenticated: string | undefined;
          let refused: string | undefined;
          if (errors.some(refusesClient)) markRefused(contextValue.req);
          for (const error of errors) {
            const kind = errorKind(error);
            const original = originalOf(error);
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
          refusals.refused(sourceOf(contextValue.req), unauthenticated);
          return Promise.resolve();
        },
      }),
  };
}
