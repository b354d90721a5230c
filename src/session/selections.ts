import {
  GraphQLIncludeDirective,
  GraphQLSkipDirective,
  Kind,
  getDirectiveValues,
  type FieldNode,
  type GraphQLResolveInfo,
  type SelectionNode,
} from 'graphql';

/**
 * Every selection of `name` directly under this field (fragments included), as the executor
 * will run them: a selection that `@skip` or `@include` leaves out does not count, so it
 * cannot make a full load that the cost model did not count, nor be refused for arguments the
 * executor would never read.
 */
export function fieldSelections(info: GraphQLResolveInfo, name: string): FieldNode[] {
  const included = (selection: SelectionNode): boolean =>
    getDirectiveValues(GraphQLSkipDirective, selection, info.variableValues)?.if !== true &&
    getDirectiveValues(GraphQLIncludeDirective, selection, info.variableValues)?.if !== false;
  const visit = (selections: readonly SelectionNode[]): FieldNode[] =>
    selections.flatMap((selection) => {
      if (!included(selection)) return [];
      if (selection.kind === Kind.FIELD) return selection.name.value === name ? [selection] : [];
      if (selection.kind === Kind.INLINE_FRAGMENT) return visit(selection.selectionSet.selections);
      const fragment = info.fragments[selection.name.value];
      return fragment ? visit(fragment.selectionSet.selections) : [];
    });
  return info.fieldNodes.flatMap((node) => visit(node.selectionSet?.selections ?? []));
}

/** Whether the query selects `name` directly under this field (see fieldSelections). */
export function selectsField(info: GraphQLResolveInfo, name: string): boolean {
  return fieldSelections(info, name).length > 0;
}
