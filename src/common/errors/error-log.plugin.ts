import { type ApolloServerPlugin } from '@apollo/server';
import { Logger } from '@nestjs/common';
import { type GraphQLContext } from '../graphql/graphql-context.js';
import { hostResponseKeys } from '../graphql/scribe-fields.js';
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
 * source's refusal budget pays for it however it is answered. The errors of a host's root
 * fields (beside Scribe's in one schema) are the host's: neither logged nor charged here. */
export function errorLogPlugin(
  refusals: Pick<AuthFailureLog, 'refused'>,
  logger: ErrorLogger = new Logger('GraphQLErrors'),
): ApolloServerPlugin<GraphQLContext> {
  return {
    requestDidStart: () =>
      Promise.resolve({
        didEncounterErrors: ({ errors: all, contextValue, schema, document, operation }) => {
          const host =
            document && operation ? hostResponseKeys(schema, document, operation) : undefined;
          const errors =
            host && host.size > 0 ? all.filter((error) => !host.has(String(error.path?.[0]))) : all;
          if (errors.length === 0) return Promise.resolve();
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
