import {
  Kind,
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLSchema,
  type InlineFragmentNode,
  type OperationDefinitionNode,
  type SelectionNode,
  type SelectionSetNode,
} from 'graphql';
import { declaredVisibility } from '../auth/field-scope.js';

/**
 * Whether a root field is Scribe's: every root field of Scribe's resolvers declares the scope
 * it needs (RequireScope, refused by ScopeGuard otherwise), and that scope is in the schema. A
 * root field that declares none is a host's, declared beside Scribe's in the same schema;
 * whatever it selects below is the host's too.
 */
export function isScribeRootField(
  schema: GraphQLSchema,
  operation: OperationDefinitionNode,
  name: string,
): boolean {
  const root = schema.getRootType(operation.operation);
  const field = root?.getFields()[name];
  return root != null && field !== undefined && declaredVisibility(root, field) !== undefined;
}

type Fragments = ReadonlyMap<string, FragmentDefinitionNode>;

const fragmentsOf = (document: DocumentNode): Fragments =>
  new Map(
    document.definitions
      .filter((node): node is FragmentDefinitionNode => node.kind === Kind.FRAGMENT_DEFINITION)
      .map((node) => [node.name.value, node]),
  );

const same = (kept: readonly SelectionNode[], set: SelectionSetNode) =>
  kept.length === set.selections.length &&
  kept.every((selection, i) => selection === set.selections[i]);

/**
 * A root selection set with the host's root fields left out. A spread of a fragment on the
 * root type becomes an inline fragment, so the fragment itself stays as written for every
 * other use. `seen` stops a fragment that spreads itself (validation refuses it later).
 */
function scribeSelections(
  schema: GraphQLSchema,
  operation: OperationDefinitionNode,
  set: SelectionSetNode,
  fragments: Fragments,
  seen: ReadonlySet<string>,
): SelectionNode[] {
  const kept: SelectionNode[] = [];
  for (const selection of set.selections) {
    if (selection.kind === Kind.FIELD) {
      const name = selection.name.value;
      // __typename is GraphQL's own, and costs nothing: kept, as it was.
      if (name === '__typename' || isScribeRootField(schema, operation, name)) kept.push(selection);
      continue;
    }
    const inner =
      selection.kind === Kind.INLINE_FRAGMENT ? selection : fragments.get(selection.name.value);
    if (!inner) continue;
    const name = selection.kind === Kind.FRAGMENT_SPREAD ? selection.name.value : undefined;
    if (name !== undefined && seen.has(name)) continue;
    const below = scribeSelections(
      schema,
      operation,
      inner.selectionSet,
      fragments,
      name === undefined ? seen : new Set([...seen, name]),
    );
    if (below.length === 0) continue;
    if (same(below, inner.selectionSet)) {
      kept.push(selection);
      continue;
    }
    const inline: InlineFragmentNode = {
      kind: Kind.INLINE_FRAGMENT,
      typeCondition: inner.typeCondition,
      directives: selection.directives,
      selectionSet: { kind: Kind.SELECTION_SET, selections: below },
    };
    kept.push(inline);
  }
  return kept;
}

/** The document, and its selected operation, as far as they are Scribe's. */
export interface ScribePart {
  readonly document: DocumentNode;
  readonly operation: OperationDefinitionNode;
}

const parts = new WeakMap<GraphQLSchema, WeakMap<DocumentNode, DocumentNode>>();

/**
 * Scribe's part of an operation, for the checks that judge a whole operation (scopes, cost,
 * depth, answer size): every operation of the document with the host's root fields left out.
 * Undefined when the selected operation names none of Scribe's fields: a host's operation is
 * the host's to bound. A document of Scribe's fields only is returned as it came, so the
 * per-document caches downstream keep working; a mixed one is rewritten once per document.
 */
export function scribePart(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
): ScribePart | undefined {
  let bySchema = parts.get(schema);
  if (!bySchema) parts.set(schema, (bySchema = new WeakMap()));
  let part = bySchema.get(document);
  if (!part) {
    part = rewrite(schema, document);
    bySchema.set(document, part);
  }
  const index = document.definitions.indexOf(operation);
  const selected = part.definitions[index] as OperationDefinitionNode | undefined;
  if (!selected || selected.selectionSet.selections.length === 0) return undefined;
  return { document: part, operation: selected };
}

function rewrite(schema: GraphQLSchema, document: DocumentNode): DocumentNode {
  const fragments = fragmentsOf(document);
  let changed = false;
  const definitions = document.definitions.map((definition) => {
    if (definition.kind !== Kind.OPERATION_DEFINITION) return definition;
    const kept = scribeSelections(
      schema,
      definition,
      definition.selectionSet,
      fragments,
      new Set(),
    );
    if (same(kept, definition.selectionSet)) return definition;
    changed = true;
    return { ...definition, selectionSet: { ...definition.selectionSet, selections: kept } };
  });
  return changed ? { ...document, definitions } : document;
}

/**
 * The response keys (alias or name) of the host's root fields an operation selects: where in
 * the answer a host's field, and its errors, are.
 */
export function hostResponseKeys(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
): ReadonlySet<string> {
  const fragments = fragmentsOf(document);
  const keys = new Set<string>();
  const seen = new Set<string>();
  const walk = (set: SelectionSetNode) => {
    for (const selection of set.selections) {
      if (selection.kind === Kind.FIELD) {
        const name = selection.name.value;
        if (name !== '__typename' && !isScribeRootField(schema, operation, name)) {
          keys.add(selection.alias?.value ?? name);
        }
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        walk(selection.selectionSet);
      } else if (!seen.has(selection.name.value)) {
        seen.add(selection.name.value);
        const fragment = fragments.get(selection.name.value);
        if (fragment) walk(fragment.selectionSet);
      }
    }
  };
  walk(operation.selectionSet);
  return keys;
}
