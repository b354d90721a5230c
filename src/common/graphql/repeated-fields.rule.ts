import {
  Kind,
  print,
  type ASTVisitor,
  type FieldNode,
  type SelectionSetNode,
  type ValidationContext,
} from 'graphql';
import { queryTooComplexError } from './query-limits.js';

/**
 * Refuses a selection set below the root that selects one field with the same arguments under
 * more than one alias, directly or through fragments. Nothing is gained by it, and it multiplies the answer:
 * 29 aliases of `content` on a page of large messages made an answer past V8's longest string.
 * The same field with other arguments (two sessions, say) is not a repeat.
 */
export function repeatedFieldsRule(context: ValidationContext): ASTVisitor {
  return {
    SelectionSet(node) {
      // Root fields repeated under aliases are bounded already, a transcript by the full
      // reads it counts as; what nothing else bounds is a repeat inside an answer.
      const parent = context.getParentType();
      const schema = context.getSchema();
      if (parent === schema.getQueryType() || parent === schema.getMutationType()) {
        return undefined;
      }
      const keysOf = new Map<string, string>();
      for (const field of fieldsOf(node, context, new Set())) {
        const identity = `${field.name.value}(${field.arguments?.map((arg) => print(arg)).join(',') ?? ''})`;
        const key = field.alias?.value ?? field.name.value;
        const earlier = keysOf.get(identity);
        if (earlier === undefined) {
          keysOf.set(identity, key);
        } else if (earlier !== key) {
          context.reportError(
            queryTooComplexError(
              `${field.name.value} is selected as both ${earlier} and ${key}: select a field once`,
            ),
          );
          return false;
        }
      }
      return undefined;
    },
  };
}

/** The fields a selection set selects, through inline fragments and named ones. */
function* fieldsOf(
  set: SelectionSetNode,
  context: ValidationContext,
  spread: Set<string>,
): Generator<FieldNode> {
  for (const selection of set.selections) {
    if (selection.kind === Kind.FIELD) {
      yield selection;
    } else if (selection.kind === Kind.INLINE_FRAGMENT) {
      yield* fieldsOf(selection.selectionSet, context, spread);
    } else {
      const name = selection.name.value;
      const fragment = context.getFragment(name);
      if (!fragment || spread.has(name)) continue;
      spread.add(name);
      yield* fieldsOf(fragment.selectionSet, context, spread);
    }
  }
}
