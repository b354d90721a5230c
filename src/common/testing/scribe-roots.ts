import {
  buildSchema,
  Kind,
  type DocumentNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from 'graphql';
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

/**
 * A schema where the root fields named in `scribe` (`Type.field`) declare a scope, as
 * RequireScope makes Scribe's, and every other root field declares none, as a host's beside them.
 */
export function schemaWithHostFields(sdl: string, scribe: readonly string[]): GraphQLSchema {
  const schema = buildSchema(sdl);
  for (const root of [schema.getQueryType(), schema.getMutationType()]) {
    for (const field of Object.values(root?.getFields() ?? {})) {
      if (scribe.includes(`${root?.name}.${field.name}`)) {
        (field as { extensions: object }).extensions = { [FIELD_SCOPE]: 'read' };
      }
    }
  }
  return schema;
}

/** Scribe's `session`, `sessions` and `append` beside a host's `hostUser`, `hostClock`, `hostSave`. */
export const HOST_FIELDS_SDL = `
  type Query { session: Int, sessions: Int, hostUser: Int, hostClock: Int }
  type Mutation { append: Int, hostSave: Int }
`;
export const SCHEMA_WITH_HOST_FIELDS = schemaWithHostFields(HOST_FIELDS_SDL, [
  'Query.session',
  'Query.sessions',
  'Mutation.append',
]);

/** The operations of a document, in order. */
export const operationsOf = (document: DocumentNode) =>
  document.definitions.filter(
    (node): node is OperationDefinitionNode => node.kind === Kind.OPERATION_DEFINITION,
  );
