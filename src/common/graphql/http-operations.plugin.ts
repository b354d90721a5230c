import { type ApolloServerPlugin } from '@apollo/server';
import { OperationTypeNode } from 'graphql';
import { type GraphQLContext } from './graphql-context.js';
import { scribePart } from './scribe-fields.js';
import { ScribeRefusal } from './scribe-refusal.js';
import { noteOperation } from '../http/request-tracing.js';
import { ScribeErrorCode } from '../errors/scribe-error-code.js';

/**
 * Subscriptions run over the WebSocket only (graphql-ws, with its own checks and slots). Sent
 * over HTTP, Apollo would run the field's resolver with no event: past the checks that guard
 * a subscription's start, and failing as a fault of the server's. It is the client's mistake,
 * refused as a query sent over the socket is (BAD_REQUEST), and so charged to its source.
 * A host's subscription (none of Scribe's fields) is the host's to answer.
 * It also names the operation in the request's access line (requestTracing): a GraphQL name,
 * checked by the parser, so it cannot forge anything in a log line.
 */
export function httpOperationsPlugin(): ApolloServerPlugin<GraphQLContext> {
  return {
    requestDidStart: () =>
      Promise.resolve({
        didResolveOperation: ({ operation, schema, document, contextValue }) => {
          if (operation?.name) noteOperation(contextValue.req?.res, operation.name.value);
          if (operation?.operation !== OperationTypeNode.SUBSCRIPTION) return Promise.resolve();
          if (!scribePart(schema, document, operation)) return Promise.resolve();
          throw new ScribeRefusal(
            'Subscriptions run over the WebSocket at this URL (graphql-ws); over HTTP, send queries and mutations',
            { extensions: { code: ScribeErrorCode.BadRequest, http: { status: 400 } } },
          );
        },
      }),
  };
}
