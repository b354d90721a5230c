import { type ApolloServerPlugin } from '@apollo/server';
import { OperationTypeNode } from 'graphql';
import { type AnswerBounds } from './answer-bytes.js';
import { untilWritten, writeDeadlineMs } from '../http/until-written.js';
import { awaitSerialisation } from './answer-serialiser.js';
import { type GraphQLContext } from './graphql-context.js';
import { MutationWorstCase } from './mutation-worst-case.js';
import { queryTooComplexError } from './query-limits.js';
import { scribePart } from './scribe-fields.js';

/**
 * Bounds every answer by MAX_RESPONSE_BYTES, in two ways. A mutation changes things as it
 * runs, so it is refused before it runs when its worst case (answerBytesEstimator) passes the
 * bound. A query is bounded while it runs, by the ResponseBudget its resolvers reserve from
 * (a static worst case would refuse honest reads: any page of messages could be MAX_PAGE_BYTES);
 * once refused, its answer is the one error, HTTP 400, and nothing of what was read. Only
 * Scribe's part of a mutation is costed: a host's fields are the host's to bound.
 */
export function responseBudgetPlugin(
  maxBytes: number,
  bounds: AnswerBounds,
  reading: Parameters<typeof writeDeadlineMs>[1],
): ApolloServerPlugin<GraphQLContext> {
  const worstCase = new MutationWorstCase(bounds, maxBytes);
  return {
    requestDidStart: () =>
      Promise.resolve({
        didResolveOperation: ({ schema, document, request, operation, contextValue }) => {
          if (operation?.operation !== OperationTypeNode.MUTATION) return Promise.resolve();
          const part = scribePart(schema, document, operation);
          if (!part) return Promise.resolve();
          // The body's own variables are JSON.parse's: plain values (see MutationWorstCase).
          const body = contextValue.req?.body as { variables?: unknown } | undefined;
          const plain = request.variables === undefined || request.variables === body?.variables;
          const worst = worstCase.of(schema, part, request, plain);
          if (worst === undefined || worst <= maxBytes) return Promise.resolve();
          return Promise.reject(
            queryTooComplexError(
              `The answer could be ${worst} bytes, more than ${maxBytes} bytes (MAX_RESPONSE_BYTES): nothing was changed. Select fewer fields or send fewer mutations at once.`,
            ),
          );
        },
        willSendResponse: ({ response, contextValue }) => {
          const { budget, requestId } = contextValue;
          if (!budget) return Promise.resolve();
          const body = response.body;
          const refusal = budget.refused;
          if (refusal && body.kind === 'single') {
            body.singleResult = {
              errors: [
                {
                  message: refusal.message,
                  extensions: { code: refusal.code },
                },
              ],
            };
            response.http.status = 400;
          }
          const data = body.kind === 'single' ? body.singleResult.data : undefined;
          // The slot is kept until the answer is written: its string, then the bytes Node
          // buffers for a client that reads slowly, are its largest copies. A client that
          // reads slower than a body may be sent is cut (a character is at most 3 bytes).
          const http = contextValue.req.res;
          if (typeof data === 'object' && data !== null) {
            awaitSerialisation(data, {
              requestId: requestId ?? '',
              done: (characters) =>
                characters === undefined || !http
                  ? budget.end()
                  : untilWritten(http, writeDeadlineMs(3 * characters, reading), () =>
                      budget.end(),
                    ),
            });
          } else {
            budget.end();
          }
          return Promise.resolve();
        },
      }),
  };
}
