import {
  isInputObjectType,
  isListType,
  isNonNullType,
  typeFromAST,
  type GraphQLError,
  type GraphQLInputType,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from 'graphql';
import { ScribeRefusal } from './scribe-refusal.js';
import { ScribeErrorCode } from '../errors/scribe-error-code.js';

// No list Scribe takes holds more: appendMessages takes 1 to 1,000 messages.
export const MAX_INPUT_LIST_ITEMS = 1000;

/**
 * Why the variables of `operation` are refused before they are coerced, or undefined: a list
 * in a typed input holding more than `maxItems` items, named by its path (`input.messages`).
 * graphql-js coerces every item of a list before any rule of Scribe's sees it, a few
 * microseconds each: a list of 400,000 messages held the event loop for seconds, to be refused
 * at the end. This walks only what the types name; free-form JSON (a scalar) is not entered,
 * and the body's shape was bounded before it was parsed.
 */
export function oversizedInputList(
  schema: GraphQLSchema,
  operation: OperationDefinitionNode,
  variables: Readonly<Record<string, unknown>> | undefined,
  maxItems = MAX_INPUT_LIST_ITEMS,
): string | undefined {
  for (const definition of operation.variableDefinitions ?? []) {
    const type = typeFromAST(schema, definition.type) as GraphQLInputType | undefined;
    if (!type) continue;
    const name = definition.variable.name.value;
    const problem = walk(type, variables?.[name], name, maxItems);
    if (problem) return problem;
  }
  return undefined;
}

// Whether values of a type can hold a list anywhere: most inputs cannot (a single append's),
// and are never walked; a batch's items are not entered, only its list is measured.
const holdsList = new WeakMap<GraphQLInputType, boolean>();

function mayHoldList(type: GraphQLInputType): boolean {
  const known = holdsList.get(type);
  if (known !== undefined) return known;
  // A type met again while it is worked out (a recursive input) is taken to hold one: a
  // wrong guess only walks more, never less.
  holdsList.set(type, true);
  let holds = false;
  if (isNonNullType(type)) holds = mayHoldList(type.ofType);
  else if (isListType(type)) holds = true;
  else if (isInputObjectType(type)) {
    holds = Object.values(type.getFields()).some((field) => mayHoldList(field.type));
  }
  holdsList.set(type, holds);
  return holds;
}

function walk(
  type: GraphQLInputType,
  value: unknown,
  path: string,
  maxItems: number,
): string | undefined {
  if (value === null || value === undefined || !mayHoldList(type)) return undefined;
  if (isNonNullType(type)) return walk(type.ofType, value, path, maxItems);
  if (isListType(type)) {
    // A single value where a list is expected is coerced as a list of one.
    if (!Array.isArray(value)) return walk(type.ofType, value, path, maxItems);
    if (value.length > maxItems) {
      return `${path} holds ${value.length} items; a list may hold at most ${maxItems}`;
    }
    for (let index = 0; index < value.length; index++) {
      const problem = walk(type.ofType, value[index], `${path}.${index}`, maxItems);
      if (problem) return problem;
    }
    return undefined;
  }
  if (isInputObjectType(type) && typeof value === 'object' && !Array.isArray(value)) {
    const fields = type.getFields();
    for (const [name, field] of Object.entries(fields)) {
      const problem = walk(
        field.type,
        (value as Record<string, unknown>)[name],
        `${path}.${name}`,
        maxItems,
      );
      if (problem) return problem;
    }
  }
  return undefined;
}

/** The refusal of an oversized list: the client's input, answered before anything runs. */
export function inputListTooLongError(message: string): GraphQLError {
  return new ScribeRefusal(message, {
    extensions: { code: ScribeErrorCode.BadUserInput, http: { status: 400 } },
  });
}
