import { type GraphQLSchema } from 'graphql';
import { type Scope } from '../../config/access-settings.js';
import { FIELD_SCOPE } from '../auth/field-scope.js';

/**
 * Marks every root field of a test schema as Scribe's, as RequireScope does in the real one:
 * the checks that judge an operation judge Scribe's root fields only (scribePart).
 */
export function asScribeRoots(schema: GraphQLSchema, scope: Scope = 'read'): GraphQLSchema {
  for (const root of [
    schema.getQueryType(),
    schema.getMutationType(),
    schema.getSubscriptionType(),
  ]) {
    for (const field of Object.values(root?.getFields() ?? {})) {
      (field as { extensions: object }).extensions = { ...field.extensions, [FIELD_SCOPE]: scope };
    }
  }
  return schema;
}
