import { Kind, OperationTypeNode, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';
import { isScribeRootField } from '../common/graphql/scribe-fields.js';

/** The label of every operation name that is not one of Scribe's root fields. */
export const OTHER_OPERATION = 'other';

/** The labels of a GraphQL request in scribe_graphql_request_duration_seconds. */
export interface OperationLabels {
  /** query, mutation or subscription; `unknown` when no operation was resolved (a bad document). */
  operation_type: string;
  operation_name: string;
}

const TYPES = [OperationTypeNode.QUERY, OperationTypeNode.MUTATION, OperationTypeNode.SUBSCRIPTION];

/**
 * The labels of one operation. Its name is the one root field of Scribe's it selects (`session`,
 * `appendMessages`, ...), aliases and `__typename` aside; anything else is `other`: several
 * root fields, a root field under a fragment, a host's field, or no operation at all. Why not
 * the name the client gives the operation: that is free text, and each new one would be a new
 * series. Scribe's schema bounds these labels: a few dozen series at most, whoever calls.
 */
export function operationLabels(
  schema: GraphQLSchema | undefined,
  operation: OperationDefinitionNode | null | undefined,
): OperationLabels {
  if (!operation) return { operation_type: 'unknown', operation_name: OTHER_OPERATION };
  const fields = operation.selectionSet.selections.filter(
    (selection) => !(selection.kind === Kind.FIELD && selection.name.value === '__typename'),
  );
  const [only] = fields;
  const name =
    schema !== undefined &&
    fields.length === 1 &&
    only.kind === Kind.FIELD &&
    isScribeRootField(schema, operation, only.name.value)
      ? only.name.value
      : OTHER_OPERATION;
  return { operation_type: operation.operation, operation_name: name };
}

/**
 * Every label pair operationLabels can give on `schema`: each of Scribe's root fields under
 * its type, and `other` under each type and `unknown`. The series start at 0 with these.
 */
export function knownOperationLabels(schema: GraphQLSchema): OperationLabels[] {
  const labels: OperationLabels[] = [
    { operation_type: 'unknown', operation_name: OTHER_OPERATION },
  ];
  for (const type of TYPES) {
    labels.push({ operation_type: type, operation_name: OTHER_OPERATION });
    const root = schema.getRootType(type);
    for (const name of Object.keys(root?.getFields() ?? {})) {
      const operation: OperationDefinitionNode = {
        kind: Kind.OPERATION_DEFINITION,
        operation: type,
        selectionSet: { kind: Kind.SELECTION_SET, selections: [] },
      };
      if (isScribeRootField(schema, operation, name)) {
        labels.push({ operation_type: type, operation_name: name });
      }
    }
  }
  return labels;
}
