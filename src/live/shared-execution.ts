import {
  Kind,
  createSourceEventStream,
  execute,
  getNamedType,
  getOperationAST,
  isAbstractType,
  isObjectType,
  visit,
  BREAK,
  type ASTNode,
  type ExecutionArgs,
  type ExecutionResult,
  type GraphQLNamedType,
  type GraphQLSchema,
} from 'graphql';

type Awaitable<T> = T | Promise<T>;
/** One event's result for one operation, and whether a second subscriber has had it. */
type SharedResult = { result: Awaitable<ExecutionResult>; shared: boolean };
/** Results as graphql-ws takes them: it ends a subscription with `return`. */
type EventStream = AsyncIterableIterator<ExecutionResult> & {
  return(): Promise<IteratorResult<ExecutionResult, void>>;
};

/**
 * Why this exists: graphql-js executes a subscription's selection set for each event once per
 * subscriber (its `subscribe` maps every source event through `execute`). With 100 subscribers
 * of one session, each message was executed, its variables coerced and its fields resolved 100
 * times over: the largest share of the server's CPU after the socket writes (issue 24's
 * profile). The result of one event is the same for every subscriber that sent the same
 * operation, when nothing in it reads who asks: so it is computed once, and handed to each.
 *
 * That holds for a subscription field listed as event-only (its `resolve` reads the event
 * alone: the caller's scope was checked when it subscribed) whose type reaches no field with a
 * resolver of its own and no abstract type (whose `resolveType` may read the context); both
 * are checked on the schema, once. Two subscribers share when their documents read the same
 * and, if the selection reads a variable (in a directive), their variables are equal too: the
 * field's own arguments (`sessionId`, `after`) choose the events, not what each one reads.
 *
 * Shared results are kept by the event object: every subscriber of a session gets the same
 * object from LiveChannels, and reads it in the same turn of the event loop when it keeps up.
 * They are dropped after that turn, so that a stalled subscriber's feed, bounded by its own
 * bytes, holds no copies made for others. An event replayed from the database is each
 * subscriber's own, and executes as before.
 */
export class SharedExecution {
  private readonly results = new WeakMap<object, Map<string, SharedResult>>();
  /** Per schema, whether each subscription field's events can be shared. */
  private readonly shareable = new WeakMap<GraphQLSchema, Map<string, boolean>>();

  constructor(private readonly eventOnlyFields: ReadonlySet<string>) {}

  /** graphql-ws's `subscribe`: graphql-js's own, but executing a shared event once. */
  readonly subscribe = async (args: ExecutionArgs): Promise<EventStream | ExecutionResult> => {
    const stream = await createSourceEventStream(args);
    if (!isAsyncIterable(stream)) return stream;
    const key = this.keyOf(args);
    const run = (event: unknown): Awaitable<ExecutionResult> =>
      execute({ ...args, rootValue: event });
    return mapEvents(
      stream,
      key === undefined ? run : (event) => this.once(event, key, () => run(event)),
    );
  };

  /** What a subscription's results are shared by; undefined for one that shares none. */
  keyOf(args: ExecutionArgs): string | undefined {
    const operation = getOperationAST(args.document, args.operationName);
    const root = operation?.selectionSet.selections;
    if (!operation || root?.length !== 1 || root[0].kind !== Kind.FIELD) return undefined;
    const field = root[0];
    if (!this.canShare(args.schema, field.name.value)) return undefined;
    const text = args.document.loc?.source.body;
    if (text === undefined) return undefined;
    const readsVariables = [
      ...(operation.directives ?? []),
      ...(field.directives ?? []),
      ...(field.selectionSet ? [field.selectionSet] : []),
      ...args.document.definitions.filter((node) => node.kind === Kind.FRAGMENT_DEFINITION),
    ].some(hasVariable);
    const variables = readsVariables ? JSON.stringify(args.variableValues ?? {}) : '';
    return `${args.operationName ?? ''}\n${variables}\n${text}`;
  }

  private once(event: unknown, key: string, run: () => Awaitable<ExecutionResult>) {
    if (typeof event !== 'object' || event === null) return run();
    let byKey = this.results.get(event);
    if (!byKey) {
      byKey = new Map();
      this.results.set(event, byKey);
      // Kept for the subscribers that read the event in this fan-out, no longer: one that
      // reads it later (behind, or stalled) executes its own, and the event held in its feed
      // holds no copies for the others.
      setImmediate(() => this.results.delete(event));
    }
    const kept = byKey.get(key);
    if (kept === undefined) {
      const result = run();
      byKey.set(key, { result, shared: false });
      return result;
    }
    if (!kept.shared) {
      kept.shared = true;
      kept.result = serialisable(kept.result);
    }
    return kept.result;
  }

  private canShare(schema: GraphQLSchema, fieldName: string): boolean {
    let fields = this.shareable.get(schema);
    if (!fields) {
      fields = new Map();
      this.shareable.set(schema, fields);
    }
    let can = fields.get(fieldName);
    if (can === undefined) {
      const field = schema.getSubscriptionType()?.getFields()[fieldName];
      can =
        field !== undefined &&
        this.eventOnlyFields.has(fieldName) &&
        onlyDefaultResolvers(getNamedType(field.type), new Set());
      fields.set(fieldName, can);
    }
    return can;
  }
}

/**
 * A result handed to several subscribers, as plain objects: graphql-js builds its objects
 * with `Object.create(null)`, which V8 keeps as dictionaries, and JSON.stringify, once per
 * subscriber, took twice as long on them. Copied once, when a second subscriber asks; a result
 * with errors keeps them as they are (GraphQLErrors, which each subscriber's answer formats).
 */
function serialisable(result: Awaitable<ExecutionResult>): Awaitable<ExecutionResult> {
  if (result instanceof Promise || result.errors) return result;
  return JSON.parse(JSON.stringify(result)) as ExecutionResult;
}

/**
 * The resolver Nest gives a plain `@Field` property: it reads `root[name]`, nothing else. (By
 * its name: a resolver of Nest's own making, a `@ResolveField` or a middleware, is
 * `(...args)` and could read anything; one not recognised here only shares nothing.)
 */
const PROPERTY_RESOLVER = 'rootFieldResolver';

/** Whether a type and every type under it read their values as stored, with nothing else. */
function onlyDefaultResolvers(type: GraphQLNamedType, seen: Set<GraphQLNamedType>): boolean {
  if (seen.has(type)) return true;
  seen.add(type);
  if (isAbstractType(type)) return false;
  if (!isObjectType(type)) return true;
  if (type.isTypeOf) return false;
  return Object.values(type.getFields()).every(
    (field) =>
      (field.resolve === undefined || field.resolve.name === PROPERTY_RESOLVER) &&
      onlyDefaultResolvers(getNamedType(field.type), seen),
  );
}

function hasVariable(node: ASTNode): boolean {
  let found = false;
  visit(node, {
    Variable() {
      found = true;
      return BREAK;
    },
  });
  return found;
}

function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return typeof (value as AsyncIterable<unknown>)[Symbol.asyncIterator] === 'function';
}

/**
 * The source's events, each mapped to its result, as graphql-js maps them (its mapping is not
 * exported): a mapping that throws ends the source, and ending the results ends the source.
 * Exported for its spec.
 */
export function mapEvents(
  source: AsyncIterable<unknown>,
  map: (event: unknown) => Awaitable<ExecutionResult>,
): EventStream {
  const events = source[Symbol.asyncIterator]();
  const close = async () => {
    try {
      await events.return?.();
    } catch {
      // The mapping's own error is the one to tell.
    }
  };
  const mapped = async (
    step: IteratorResult<unknown>,
  ): Promise<IteratorResult<ExecutionResult, void>> => {
    if (step.done) return { value: undefined, done: true };
    try {
      return { value: await map(step.value), done: false };
    } catch (error) {
      await close();
      throw error;
    }
  };
  const stream: EventStream = {
    next: async () => mapped(await events.next()),
    return: async () =>
      events.return ? mapped(await events.return()) : { value: undefined, done: true },
    throw: async (error: unknown) => {
      if (events.throw) return mapped(await events.throw(error));
      await close();
      throw error;
    },
    [Symbol.asyncIterator]: () => stream,
  };
  return stream;
}
