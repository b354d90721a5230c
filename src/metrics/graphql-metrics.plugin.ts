import { type ApolloServerPlugin } from '@apollo/server';
import { type GraphQLSchema } from 'graphql';
import { type MetricsService } from './metrics.service.js';
import { knownOperationLabels, operationLabels } from './operation-labels.js';

/**
 * Times each GraphQL request over HTTP into scribe_graphql_request_duration_seconds, from the
 * start of Apollo's work on it to its answer, labelled by operationLabels. The label pairs the
 * served schema allows start at 0 when the server starts.
 */
export function graphqlMetricsPlugin(
  metrics: Pick<MetricsService, 'graphqlRequestDuration'>,
): ApolloServerPlugin {
  let served: GraphQLSchema | undefined;
  return {
    serverWillStart: ({ schema }) => {
      served = schema;
      for (const labels of knownOperationLabels(schema)) {
        metrics.graphqlRequestDuration.zero(labels);
      }
      return Promise.resolve();
    },
    requestDidStart: () => {
      const timer = metrics.graphqlRequestDuration.startTimer();
      return Promise.resolve({
        willSendResponse: ({ operation, schema }) => {
          timer(operationLabels(schema ?? served, operation));
          return Promise.resolve();
        },
      });
    },
  };
}
