import { type ApolloServerPlugin } from '@apollo/server';
import {
  GraphQLError,
  type DocumentNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from 'graphql';
import { ScribeErrorCode } from '../errors/scribe-error-code.js';
import { ScribeException } from '../errors/scribe.exception.js';
import { type GraphQLContext } from '../graphql/graphql-context.js';
import { scribePart } from '../graphql/scribe-fields.js';
import { type Authenticator, type Principal } from './authenticator.js';
import { hiddenField } from './field-scope-check.js';
import { missingScope } from './scope-refusal.js';

/**
 * The refusal of an operation that names a field its caller may not see, or undefined when
 * it may run: UNAUTHENTICATED for an anonymous caller (present a token), FORBIDDEN otherwise,
 * naming the field and the scope, as the scope guard does for a root field.
 */
export function fieldScopeRefusal(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  principal: Principal,
): GraphQLError | undefined {
  const hidden = hiddenField(schema, document, operation, principal.scopes);
  if (!hidden) return undefined;
  const refusal =
    hidden.needs === undefined
      ? new ScribeException(ScribeErrorCode.Forbidden, `${hidden.coordinate} declares no scope`)
      : missingScope(principal, hidden.coordinate, hidden.needs);
  const status = refusal.code === ScribeErrorCode.Unauthenticated ? 401 : 403;
  return new GraphQLError(refusal.message, {
    originalError: refusal,
    extensions: { http: { status } },
  });
}

/**
 * Refuses, before it runs, an operation over HTTP that selects a field its caller may not see
 * (see hiddenField). The caller is the one the HTTP layer authenticated: its outcome is cached
 * per request, so this costs no second verification. Only Scribe's part of the operation is
 * judged (scribePart): a host's field beside Scribe's is the host's to guard.
 */
export function fieldScopesPlugin(
  authenticator: Pick<Authenticator, 'forRequest'>,
): ApolloServerPlugin<GraphQLContext> {
  return {
    requestDidStart: () =>
      Promise.resolve({
        didResolveOperation: async ({ schema, document, operation, contextValue }) => {
          const part = operation && scribePart(schema, document, operation);
          if (!part) return;
          const outcome = await authenticator.forRequest(contextValue.req);
          // Refused credentials are answered 401 before GraphQL on Scribe's own endpoint; on a
          // host's ('host' mode) they reach here, and Scribe's part is refused as it would be.
          if (outcome.kind === 'refused') {
            throw new GraphQLError(outcome.reason, {
              originalError: new ScribeException(ScribeErrorCode.Unauthenticated, outcome.reason),
              extensions: { http: { status: 401 } },
            });
          }
          const refusal = fieldScopeRefusal(
            schema,
            part.document,
            part.operation,
            outcome.principal,
          );
          if (refusal) throw refusal;
        },
      }),
  };
}
