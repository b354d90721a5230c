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
 * GraphQL's own fields: __typename, and introspection's __schema and __type. They are
 * nobody's: neither Scribe's nor a host's, and selecting them makes no operation Scribe's.
 */
export const isMetaField = (name: string): boolean => name.startsWith('__');

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

/** A document without the host's root fields, and which of its operations are Scribe's. */
interface Rewritten {
  readonly document: DocumentNode;
  /** By definition index: whether the operation there selects a field of Scribe's. */
  readonly scribe: ReadonlySet<number>;
}

const parts = new WeakMap<GraphQLSchema, WeakMap<DocumentNode, Rewritten>>();

function rewritten(schema: GraphQLSchema, document: DocumentNode): Rewritten {
  let bySchema = parts.get(schema);
  if (!bySchema) parts.set(schema, (bySchema = new WeakMap()));
  let part = bySchema.get(document);
  if (!part) {
    part = rewrite(schema, document);
    bySchema.set(document, part);
  }
  return part;
}

/**
 * Scribe's part of an operation, for the checks that judge a whole operation (scopes, cost,
 * depth, answer size): every operation of the document with the host's root fields left out.
 * Undefined when the selected operation names none of Scribe's fields, meta fields aside
 * (`{ hello __typename }` is the host's): a host's operation is the host's to bound. A
 * document of Scribe's fields only is returned as it came, so the per-document caches
 * downstream keep working; a mixed one is rewritten once per document.
 */
export function scribePart(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
): ScribePart | undefined {
  const index = document.definitions.indexOf(operation);
  if (!rewritten(schema, document).scribe.has(index)) return undefined;
  return withoutHostFields(schema, document, operation);
}

/**
 * The operation with the host's root fields left out and __typename kept, undefined when
 * nothing is left: what Scribe's own endpoint, with no host fields, judges of any operation,
 * introspection's roots aside (see queryLimitsPlugin). Elsewhere, scribePart.
 */
export function withoutHostFields(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
): ScribePart | undefined {
  const part = rewritten(schema, document).document;
  const index = document.definitions.indexOf(operation);
  const selected = part.definitions[index] as OperationDefinitionNode | undefined;
  if (!selected || selected.selectionSet.selections.length === 0) return undefined;
  return { document: part, operation: selected };
}

function rewrite(schema: GraphQLSchema, document: DocumentNode): Rewritten {
  const fragments = fragmentsOf(document);
  const scribe = new Set<number>();
  let changed = false;
  const definitions = document.definitions.map((definition, index) => {
    if (definition.kind !== Kind.OPERATION_DEFINITION) return definition;
    const kept = scribeSelections(
      schema,
      definition,
      definition.selectionSet,
      fragments,
      new Set(),
    );
    if (namesScribeField(kept, fragments, new Set())) scribe.add(index);
    if (same(kept, definition.selectionSet)) return definition;
    changed = true;
    return { ...definition, selectionSet: { ...definition.selectionSet, selections: kept } };
  });
  return { document: changed ? { ...document, definitions } : document, scribe };
}

/**
 * Whether kept selections (Scribe's root fields and __typename only, see scribeSelections)
 * hold a field that is not a meta field. A spread kept as written spreads a fragment whose
 * selections were all kept, so the fragment is walked as it stands.
 */
function namesScribeField(
  kept: readonly SelectionNode[],
  fragments: Fragments,
  seen: Set<string>,
): boolean {
  return kept.some((selection) => {
    if (selection.kind === Kind.FIELD) return !isMetaField(selection.name.value);
    if (selection.kind === Kind.INLINE_FRAGMENT) {
      return namesScribeField(selection.selectionSet.selections, fragments, seen);
    }
    const fragment = fragments.get(selection.name.value);
    if (!fragment || seen.has(selection.name.value)) return false;
    seen.add(selection.name.value);
    return namesScribeField(fragment.selectionSet.selections, fragments, seen);
  });
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

const alone = new WeakMap<OperationDefinitionNode, DocumentNode>();

/**
 * The operation alone, with the document's fragments: what a rule that judges a whole
 * document (depth, aliases) judges of one operation of several. Built once per operation.
 */
export function operationAlone(
  document: DocumentNode,
  operation: OperationDefinitionNode,
): DocumentNode {
  let only = alone.get(operation);
  if (!only) {
    const others = document.definitions.filter(
      (definition) => definition.kind !== Kind.OPERATION_DEFINITION,
    );
    only = { kind: Kind.DOCUMENT, definitions: [operation, ...others] };
    alone.set(operation, only);
  }
  return only;
}
