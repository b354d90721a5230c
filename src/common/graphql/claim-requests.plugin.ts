import { type ApolloServerPlugin, type GraphQLRequestContext } from '@apollo/server';
import { getOperationAST } from 'graphql';
import { claimForScribe } from '../http/refusal-gate.js';
import { type GraphQLContext } from './graphql-context.js';
import { scribePart } from './scribe-fields.js';

/**
 * 'host' mode: claims for Scribe a request over HTTP whose operation selects Scribe's fields
 * (scribePart), so that its refusal spends its source's refusal budget (claimedRefusalsOnly);
 * a host's operation is the host's to count. The operation is the one resolved, or, when
 * validation refused the document first, the one it names: a document that does not parse
 * names none, and is no more Scribe's than the host's.
 */
export function claimRequestsPlugin(): ApolloServerPlugin<GraphQLContext> {
  const claim = ({
    schema,
    document,
    operation,
    request,
    contextValue,
  }: Pick<
    GraphQLRequestContext<GraphQLContext>,
    'schema' | 'document' | 'operation' | 'request' | 'contextValue'
  >) => {
    if (!document) return Promise.resolve();
    const selected = operation ?? getOperationAST(document, request.operationName);
    if (selected && scribePart(schema, document, selected)) claimForScribe(contextValue.req?.res);
    return Promise.resolve();
  };
  return {
    requestDidStart: () =>
      Promise.resolve({ didResolveOperation: claim, didEncounterErrors: claim }),
  };
}
