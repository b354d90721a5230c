import {
  Kind,
  getNamedType,
  isObjectType,
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLObjectType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';
import { type Scope } from '../../config/access-settings.js';
import { declaredVisibility, type FieldVisibility } from './field-scope.js';

/** A field the caller named but may not see: `Type.field`, and what it declares. */
export interface HiddenField {
  readonly coordinate: string;
  /** What the field needs; undefined when it declares nothing (refused to everyone). */
  readonly needs: FieldVisibility | undefined;
}

/**
 * The first field below the root fields of `operation` that a caller holding `scopes` may not
 * see, or undefined when it may see them all. Checked on the document, once per request,
 * before anything runs: a 1000-message page costs no check per field, the answer is never
 * half built, and a mutation refused for what it selects changes nothing. Every field named
 * counts, `@skip` and `@include` aside: a caller may not even ask. Each selection set is
 * walked once, fragments included, so the cost is linear in the document.
 */
export function hiddenField(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  scopes: ReadonlySet<Scope>,
): HiddenField | undefined {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) {
      fragments.set(definition.name.value, definition);
    }
  }
  const seen = new Set<SelectionSetNode>();
  const visit = (
    type: GraphQLObjectType,
    selectionSet: SelectionSetNode,
    root: boolean,
  ): HiddenField | undefined => {
    if (seen.has(selectionSet)) return undefined;
    seen.add(selectionSet);
    for (const selection of selectionSet.selections) {
      let found: HiddenField | undefined;
      if (selection.kind === Kind.FIELD) {
        const field = type.getFields()[selection.name.value];
        // __typename, and fields validation would refuse (the executor never runs them).
        if (!field) continue;
        const rootScope = root ? declaredVisibility(type, field) : undefined;
        // A root field the caller may not run is refused by its guard, as it always was.
        if (rootScope !== undefined && rootScope !== 'public' && !scopes.has(rootScope)) continue;
        if (!root) {
          const needs = declaredVisibility(type, field);
          if (needs === undefined || (needs !== 'public' && !scopes.has(needs))) {
            return { coordinate: `${type.name}.${field.name}`, needs };
          }
        }
        const named = getNamedType(field.type);
        if (selection.selectionSet && isObjectType(named)) {
          found = visit(named, selection.selectionSet, false);
        }
      } else {
        const fragment =
          selection.kind === Kind.INLINE_FRAGMENT ? selection : fragments.get(selection.name.value);
        const condition = fragment?.typeCondition
          ? schema.getType(fragment.typeCondition.name.value)
          : type;
        if (fragment && isObjectType(condition)) {
          found = visit(condition, fragment.selectionSet, root);
        }
      }
      if (found) return found;
    }
    return undefined;
  };
  const rootType = schema.getRootType(operation.operation);
  return rootType ? visit(rootType, operation.selectionSet, true) : undefined;
}
