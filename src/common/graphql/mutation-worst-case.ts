import {
  GraphQLBoolean,
  GraphQLFloat,
  GraphQLID,
  GraphQLInt,
  GraphQLString,
  Kind,
  isEnumType,
  isInputObjectType,
  isLeafType,
  isListType,
  isNonNullType,
  getNamedType,
  typeFromAST,
  valueFromAST,
  visit,
  type FieldNode,
  type GraphQLArgument,
  type GraphQLInputType,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from 'graphql';
import { getComplexity } from 'graphql-query-complexity';
import { GraphQLJSON } from 'graphql-scalars';
import { answerBytesEstimator, type AnswerBounds } from './answer-bytes.js';
import { type ScribePart } from './scribe-fields.js';

/** A variable a root field takes whole as an argument, and what coercing it may add. */
interface Taken {
  readonly variable: string;
  readonly growth: number;
}

/** One root field's arguments as JSON, bounded without coercing them. */
interface RootArguments {
  readonly node: FieldNode;
  /** Braces, every argument's key, and the literals and defaults it takes. */
  readonly fixed: number;
  readonly taken: readonly Taken[];
}

/** What every request of one operation shares: its worst case but for its variables. */
interface Shape {
  readonly schema: GraphQLSchema;
  readonly structure: number;
  readonly roots: readonly RootArguments[];
}

type Request = { variables?: Record<string, unknown>; operationName?: string };

/** An argument's key in JSON, with its quotes, colon and comma. */
const keyBytes = (name: string) => Buffer.byteLength(name, 'utf8') + 4;

/**
 * Bytes of a value as JSON; NaN for one JSON cannot hold (a BigInt, a nesting deeper than
 * JSON.stringify recurses: a host's own body parser may let one through), so that no bound is
 * made of it and the exact cost, which catches what it throws, decides.
 */
const jsonBytes = (value: unknown) => {
  try {
    const json = JSON.stringify(value) as string | undefined;
    return json === undefined ? Number.NaN : Buffer.byteLength(json, 'utf8');
  } catch {
    return Number.NaN;
  }
};

/**
 * A mutation's worst-case answer (answerBytesEstimator, through getComplexity), computed
 * without coercing its variables a second time. getComplexity coerces every variable before
 * it costs a field, and the executor coerces them all again right after: for a batch of
 * 1,000 messages that was a quarter of the request's transient heap and a tenth of its CPU
 * (issue 24's profiles). Most mutations send their input whole, as variables of their root
 * fields. The rest of their worst case is then the same for every request of the operation,
 * learned from its first, and what a variable adds is bounded by its JSON as the client sent
 * it plus what coercion may add to that (a number for an ID becomes a string; a lone value
 * becomes a list). A request whose bound fits under the limit is admitted on it. Any other
 * is costed exactly, as before, so every decision is the one the exact cost makes.
 *
 * The bound holds for plain JSON only: a host's server-side `executeOperation` may pass class
 * instances, whose JSON need not be what coercion reads. The caller says whether the
 * variables are the request body's own, as JSON.parse made them.
 */
export class MutationWorstCase {
  private readonly shapes = new WeakMap<OperationDefinitionNode, Shape | null>();
  private readonly estimator: ReturnType<typeof answerBytesEstimator>;

  constructor(
    private readonly bounds: AnswerBounds,
    private readonly maxBytes: number,
  ) {
    this.estimator = answerBytesEstimator(bounds);
  }

  /**
   * The answer's worst case in bytes: exact, or a bound at most maxBytes; undefined when
   * the variables do not fit their types (the executor refuses those).
   */
  of(schema: GraphQLSchema, part: ScribePart, request: Request, plainVariables: boolean) {
    const shape = this.shapes.get(part.operation);
    if (shape && shape.schema === schema && plainVariables) {
      const bound = shape.structure + this.argumentBytes(shape, request.variables ?? {});
      if (bound <= this.maxBytes) return bound;
    }
    if (shape !== undefined) return this.exact(schema, part, request);
    const plan = planOf(schema, part);
    if (!plan) {
      this.shapes.set(part.operation, null);
      return this.exact(schema, part, request);
    }
    // Costed exactly once more, hearing what its root fields' arguments add: the rest is
    // the operation's for every request.
    const roots = new Set(plan.map((root) => root.node));
    let argumentBytes = 0;
    const hearing = answerBytesEstimator(this.bounds, (node, bytes) => {
      if (roots.has(node)) argumentBytes += bytes;
    });
    const exact = this.exact(schema, part, request, hearing);
    if (exact !== undefined) {
      const structure = exact - argumentBytes;
      this.shapes.set(part.operation, { schema, structure, roots: plan });
    }
    return exact;
  }

  private exact(
    schema: GraphQLSchema,
    part: ScribePart,
    request: Request,
    estimator = this.estimator,
  ): number | undefined {
    try {
      return getComplexity({
        schema,
        query: part.document,
        variables: request.variables,
        operationName: request.operationName,
        estimators: [estimator],
      });
    } catch {
      // Variables that do not fit are the executor's to refuse; query-limits refuses the rest.
      return undefined;
    }
  }

  /** At least the bytes of every root field's arguments as JSON, once coerced. */
  private argumentBytes(shape: Shape, variables: Record<string, unknown>): number {
    let bytes = 0;
    for (const root of shape.roots) {
      bytes += root.fixed;
      for (const { variable, growth } of root.taken) {
        if (Object.hasOwn(variables, variable)) bytes += jsonBytes(variables[variable]) + growth;
      }
    }
    // NaN (a value JSON cannot hold) is never at most maxBytes: costed exactly.
    return bytes;
  }
}

/**
 * The root fields' arguments of an operation whose worst case depends on its variables only
 * through them: every variable is a root field's whole argument (none in a directive, a
 * fragment, a nested field or inside a literal), none sets a page size, none has a default,
 * and what coercing each may add is bounded. Undefined for any other operation.
 */
function planOf(schema: GraphQLSchema, { document, operation }: ScribePart) {
  const mutation = schema.getMutationType();
  if (!mutation || (operation.variableDefinitions ?? []).some((d) => d.defaultValue)) return;
  // Every use of a variable in the document, its fragments and other operations included.
  let variables = 0;
  visit(document, { VariableDefinition: () => false, Variable: () => void (variables += 1) });
  const roots: RootArguments[] = [];
  let taken = 0;
  for (const node of operation.selectionSet.selections) {
    if (node.kind !== Kind.FIELD) continue;
    const field = mutation.getFields()[node.name.value];
    if (!field) continue;
    const root = rootArguments(schema, operation, node, field.args);
    if (!root) return;
    taken += root.taken.length;
    // A leaf's arguments are not part of its worst case (see answerBytesEstimator).
    if (!isLeafType(getNamedType(field.type))) roots.push(root);
  }
  // A variable anywhere else (a directive, a nested field, a fragment) would change the rest.
  return taken === variables ? roots : undefined;
}

function rootArguments(
  schema: GraphQLSchema,
  operation: OperationDefinitionNode,
  node: FieldNode,
  definitions: readonly GraphQLArgument[],
): RootArguments | undefined {
  let fixed = 2;
  const taken: Taken[] = [];
  for (const definition of definitions) {
    fixed += keyBytes(definition.name);
    if (definition.defaultValue !== undefined) fixed += jsonBytes(definition.defaultValue);
    const given = node.arguments?.find((argument) => argument.name.value === definition.name);
    if (!given) continue;
    if (given.value.kind !== Kind.VARIABLE) {
      fixed += jsonBytes(valueFromAST(given.value, definition.type));
      continue;
    }
    const variable = given.value.name.value;
    const declared = operation.variableDefinitions?.find((d) => d.variable.name.value === variable);
    const type = declared && (typeFromAST(schema, declared.type) as GraphQLInputType | undefined);
    const growth = type ? growthOf(type, new Set()) : Number.POSITIVE_INFINITY;
    // A page size read from a variable changes the rest of the worst case.
    if (definition.name === 'first' || definition.name === 'last' || !Number.isFinite(growth)) {
      return;
    }
    taken.push({ variable, growth });
  }
  return Number.isFinite(fixed) ? { node, fixed, taken } : undefined;
}

const SAME_AS_SENT = new Set<GraphQLInputType>([
  GraphQLString,
  GraphQLBoolean,
  GraphQLInt,
  GraphQLFloat,
]);

/**
 * At most how many bytes coercing a value of `type` adds to its JSON as sent; infinite when
 * that is not bounded (a list of values that may each grow, a scalar of unknown parsing).
 */
function growthOf(type: GraphQLInputType, seen: Set<GraphQLInputType>): number {
  if (isNonNullType(type)) return growthOf(type.ofType, seen);
  // A lone value is coerced to a list of it: two brackets.
  if (isListType(type)) return growthOf(type.ofType, seen) === 0 ? 2 : Number.POSITIVE_INFINITY;
  if (isInputObjectType(type)) {
    if (seen.has(type)) return Number.POSITIVE_INFINITY;
    seen.add(type);
    let growth = 0;
    for (const field of Object.values(type.getFields())) {
      growth += growthOf(field.type, seen);
      if (field.defaultValue !== undefined) {
        growth += keyBytes(field.name) + jsonBytes(field.defaultValue);
      }
    }
    seen.delete(type);
    return Number.isNaN(growth) ? Number.POSITIVE_INFINITY : growth;
  }
  if (isEnumType(type)) {
    // Sent by name, answered as its value.
    const growths = type.getValues().map((v) => jsonBytes(v.value) - jsonBytes(v.name));
    return growths.some(Number.isNaN) ? Number.POSITIVE_INFINITY : Math.max(0, ...growths);
  }
  // An ID sent as a number is coerced to a string: two quotes.
  if (type === GraphQLID) return 2;
  if (SAME_AS_SENT.has(type)) return 0;
  // graphql-scalars' JSON takes any value as it is.
  if (type.parseValue === GraphQLJSON.parseValue) return 0;
  return Number.POSITIVE_INFINITY;
}
