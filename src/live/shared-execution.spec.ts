import { jest } from '@jest/globals';
import {
  GraphQLError,
  GraphQLInterfaceType,
  GraphQLList,
  GraphQLObjectType,
  GraphQLSchema,
  GraphQLString,
  parse,
  type ExecutionArgs,
  type ExecutionResult,
  type GraphQLFieldConfig,
} from 'graphql';
import { SharedExecution, mapEvents } from './shared-execution.js';

type Event = { id: string; body: string };
type Stream = AsyncIterableIterator<ExecutionResult> & {
  return(): Promise<IteratorResult<ExecutionResult, void>>;
};

/**
 * A source of events that every subscription of a field reads from: `publish` hands the same
 * event object to each, as LiveChannels does.
 */
class Channel {
  readonly readers = new Set<(event: unknown) => void>();
  ended = 0;

  open(): AsyncIterableIterator<unknown> {
    const queue: unknown[] = [];
    const waiting: ((result: IteratorResult<unknown>) => void)[] = [];
    const deliver = (event: unknown) => {
      const reader = waiting.shift();
      if (reader) reader({ value: event, done: false });
      else queue.push(event);
    };
    this.readers.add(deliver);
    const iterator: AsyncIterableIterator<unknown> = {
      next: () =>
        queue.length > 0
          ? Promise.resolve({ value: queue.shift(), done: false })
          : new Promise((resolve) => waiting.push(resolve)),
      return: () => {
        this.readers.delete(deliver);
        this.ended += 1;
        for (const reader of waiting.splice(0)) reader({ value: undefined, done: true });
        return Promise.resolve({ value: undefined, done: true });
      },
      [Symbol.asyncIterator]: () => iterator,
    };
    return iterator;
  }

  publish(event: unknown): void {
    for (const deliver of [...this.readers]) deliver(event);
  }
}

describe(SharedExecution.name, () => {
  let channel: Channel;
  /** How many times each field's resolver ran. */
  let runs: Record<string, number>;
  let schema: GraphQLSchema;
  let sut: SharedExecution;

  const counted = <T>(name: string, resolve: (source: T, context: unknown) => unknown) => {
    return (source: T, _args: unknown, context: unknown) => {
      runs[name] = (runs[name] ?? 0) + 1;
      return resolve(source, context);
    };
  };

  /** A subscription field of `type` over the channel, its resolve counted. */
  const eventField = (
    name: string,
    type: GraphQLObjectType | GraphQLInterfaceType,
  ): GraphQLFieldConfig<unknown, unknown> => ({
    type,
    args: { sessionId: { type: GraphQLString }, after: { type: GraphQLString } },
    subscribe: () => channel.open(),
    resolve: counted(name, (event) => event),
  });

  beforeEach(() => {
    channel = new Channel();
    runs = {};
    const message: GraphQLObjectType<Event> = new GraphQLObjectType<Event>({
      name: 'Message',
      fields: () => ({
        id: { type: GraphQLString },
        // A type that reaches itself: checked once.
        replyTo: { type: message },
        // As Nest builds a plain property's resolver: it reads the source only.
        body: {
          type: GraphQLString,
          resolve: function rootFieldResolver(root) {
            return root.body;
          },
        },
        tags: { type: new GraphQLList(GraphQLString) },
      }),
    });
    const viewed = new GraphQLObjectType<Event>({
      name: 'Viewed',
      fields: {
        id: { type: GraphQLString },
        viewer: {
          type: GraphQLString,
          resolve: counted('viewer', (_event, context) => (context as { who: string }).who),
        },
      },
    });
    const node = new GraphQLInterfaceType({
      name: 'Node',
      fields: { id: { type: GraphQLString } },
      resolveType: () => 'Message',
    });
    const checked = new GraphQLObjectType<Event>({
      name: 'Checked',
      isTypeOf: () => true,
      fields: { id: { type: GraphQLString } },
    });
    schema = new GraphQLSchema({
      query: new GraphQLObjectType({ name: 'Query', fields: { ok: { type: GraphQLString } } }),
      subscription: new GraphQLObjectType({
        name: 'Subscription',
        fields: {
          messages: eventField('messages', message),
          other: eventField('other', message),
          viewed: eventField('viewed', viewed),
          nodes: eventField('nodes', node),
          checked: eventField('checked', checked),
          failing: {
            type: message,
            subscribe: () => channel.open(),
            resolve: counted('failing', () => {
              throw new Error('no such message');
            }),
          },
          refused: {
            type: message,
            subscribe: () => {
              throw new Error('not yours');
            },
          },
        },
      }),
      types: [message],
    });
    sut = new SharedExecution(
      new Set(['messages', 'viewed', 'nodes', 'checked', 'failing', 'refused']),
    );
  });

  const argsOf = (
    query: string,
    variableValues?: Record<string, unknown>,
    contextValue: unknown = {},
  ): ExecutionArgs => ({ schema, document: parse(query), variableValues, contextValue });

  const subscribe = async (args: ExecutionArgs): Promise<Stream> =>
    (await sut.subscribe(args)) as Stream;

  /** Publishes one event and reads the next result of every stream. */
  const resultsOf = async (streams: Stream[], event: unknown) => {
    const reads = streams.map((stream) => stream.next());
    channel.publish(event);
    return (await Promise.all(reads)).map((read) => read.value as ExecutionResult);
  };

  const QUERY = 'subscription($s: String) { messages(sessionId: $s) { id body } }';

  it('executes an event once for subscribers of the same document, and hands each its result', async () => {
    const streams = await Promise.all([1, 2, 3].map(() => subscribe(argsOf(QUERY, { s: 'a' }))));
    const results = await resultsOf(streams, { id: 'm1', body: 'hello' });
    expect(results).toEqual(
      Array.from({ length: 3 }, () => ({ data: { messages: { id: 'm1', body: 'hello' } } })),
    );
    expect(runs.messages).toBe(1);
    const again = await resultsOf(streams, { id: 'm2', body: 'again' });
    expect(again.map((result) => result.data?.messages)).toEqual(
      Array.from({ length: 3 }, () => ({ id: 'm2', body: 'again' })),
    );
    expect(runs.messages).toBe(2);
  });

  it("shares across the field's own arguments: they choose the events, not what each reads", async () => {
    const resume = 'subscription($a: String) { messages(sessionId: "s", after: $a) { id } }';
    const streams = await Promise.all([
      subscribe(argsOf(QUERY, { s: 'a' })),
      subscribe(argsOf(QUERY, { s: 'b' })),
      subscribe(argsOf(resume, { a: 'cursor 1' })),
      subscribe(argsOf(resume, { a: 'cursor 2' })),
    ]);
    await resultsOf(streams, { id: 'm1', body: 'b' });
    // Two documents: once each.
    expect(runs.messages).toBe(2);
  });

  it('executes once per document: another selection reads another result', async () => {
    const streams = await Promise.all([
      subscribe(argsOf(QUERY)),
      subscribe(argsOf('subscription { messages { id } }')),
      subscribe(argsOf('subscription { messages { id } }')),
    ]);
    const results = await resultsOf(streams, { id: 'm1', body: 'b' });
    expect(results.map((result) => result.data?.messages)).toEqual([
      { id: 'm1', body: 'b' },
      { id: 'm1' },
      { id: 'm1' },
    ]);
    expect(runs.messages).toBe(2);
  });

  it('keys by the operation named, in a document of several', async () => {
    const document = 'subscription A { messages { id } } subscription B { messages { body } }';
    const named = (operationName: string) => ({ ...argsOf(document), operationName });
    const streams = await Promise.all([subscribe(named('A')), subscribe(named('B'))]);
    const results = await resultsOf(streams, { id: 'm1', body: 'b' });
    expect(results.map((result) => result.data?.messages)).toEqual([{ id: 'm1' }, { body: 'b' }]);
    expect(runs.messages).toBe(2);
  });

  it('keys by the variables when the selection reads one (a directive)', async () => {
    const query = 'subscription($b: Boolean!) { messages { id body @include(if: $b) } }';
    const streams = await Promise.all([
      subscribe(argsOf(query, { b: true })),
      subscribe(argsOf(query, { b: false })),
      subscribe(argsOf(query, { b: true })),
    ]);
    const results = await resultsOf(streams, { id: 'm1', body: 'b' });
    expect(results.map((result) => result.data?.messages)).toEqual([
      { id: 'm1', body: 'b' },
      { id: 'm1' },
      { id: 'm1', body: 'b' },
    ]);
    expect(runs.messages).toBe(2);
  });

  it.each([
    ['on the field', 'subscription($b: Boolean!) { messages @include(if: $b) { id } }'],
    ['on the operation', 'subscription($b: Boolean!) @skip(if: $b) { messages { id } }'],
    [
      'in a fragment',
      'subscription($b: Boolean!) { messages { ...F } } fragment F on Message { id @skip(if: $b) }',
    ],
  ])('keys by the variables when a directive %s reads one', (_where, query) => {
    const read = sut.keyOf(argsOf(query, { b: false }));
    const skip = sut.keyOf(argsOf(query, { b: true }));
    expect(read).toBeDefined();
    expect(read).not.toBe(skip);
  });

  it('executes per subscriber a field not listed as event-only', async () => {
    const streams = await Promise.all(
      [1, 2].map(() => subscribe(argsOf('subscription { other { id } }'))),
    );
    const results = await resultsOf(streams, { id: 'm1', body: 'b' });
    expect(results.map((result) => result.data?.other)).toEqual([{ id: 'm1' }, { id: 'm1' }]);
    expect(runs.other).toBe(2);
  });

  it('executes per subscriber a field whose type reaches a resolver of its own', async () => {
    const query = 'subscription { viewed { id viewer } }';
    const streams = await Promise.all([
      subscribe(argsOf(query, undefined, { who: 'ann' })),
      subscribe(argsOf(query, undefined, { who: 'bob' })),
    ]);
    const results = await resultsOf(streams, { id: 'm1', body: 'b' });
    expect(results.map((result) => result.data?.viewed)).toEqual([
      { id: 'm1', viewer: 'ann' },
      { id: 'm1', viewer: 'bob' },
    ]);
    expect(runs.viewed).toBe(2);
  });

  it.each([
    ['an abstract type', 'subscription { nodes { id } }'],
    ['a type that checks its values (isTypeOf)', 'subscription { checked { id } }'],
  ])('shares nothing of a field that reaches %s', (_what, query) => {
    expect(sut.keyOf(argsOf(query))).toBeUndefined();
  });

  it('shares nothing of a document that is not text (no source to key by)', () => {
    const args = argsOf(QUERY);
    expect(sut.keyOf({ ...args, document: parse(QUERY, { noLocation: true }) })).toBeUndefined();
    expect(sut.keyOf(args)).toBeDefined();
  });

  it('shares nothing of a root selection that is not one field', () => {
    expect(
      sut.keyOf(argsOf('subscription { ...F } fragment F on Subscription { messages { id } }')),
    ).toBeUndefined();
    expect(sut.keyOf(argsOf('subscription { __typename }'))).toBeUndefined();
    expect(sut.keyOf(argsOf('subscription { missing { id } }'))).toBeUndefined();
    expect(sut.keyOf(argsOf('subscription A { messages { id } }', undefined))).toBeDefined();
    expect(
      sut.keyOf({ ...argsOf('subscription A { messages { id } }'), operationName: 'B' }),
    ).toBeUndefined();
  });

  it('checks a schema once per field', () => {
    const getFields = jest.spyOn(schema.getSubscriptionType() as GraphQLObjectType, 'getFields');
    sut.keyOf(argsOf(QUERY));
    sut.keyOf(argsOf(QUERY));
    sut.keyOf(argsOf('subscription { viewed { id } }'));
    sut.keyOf(argsOf('subscription { viewed { id } }'));
    expect(getFields).toHaveBeenCalledTimes(2);
  });

  it('keeps a result for the turn it was made in only: a subscriber behind executes its own', async () => {
    const [first, second] = await Promise.all([1, 2].map(() => subscribe(argsOf(QUERY))));
    const event = { id: 'm1', body: 'b' };
    const [now] = await resultsOf([first], event);
    expect(runs.messages).toBe(1);
    // The second subscriber's feed holds the event; it reads it a turn later.
    await new Promise((resolve) => setImmediate(resolve));
    const later = (await second.next()).value as ExecutionResult;
    expect(runs.messages).toBe(2);
    expect(later).toEqual(now);
  });

  it('executes per subscriber an event that is not an object', async () => {
    const streams = await Promise.all(
      [1, 2].map(() => subscribe(argsOf('subscription { messages { __typename } }'))),
    );
    await resultsOf(streams, 'a string');
    expect(runs.messages).toBe(2);
  });

  it("hands the first subscriber graphql-js's result and the others a plain copy of it", async () => {
    const streams = await Promise.all([1, 2, 3].map(() => subscribe(argsOf(QUERY))));
    const [first, second, third] = await resultsOf(streams, { id: 'm1', body: 'b' });
    expect(Object.getPrototypeOf(first.data)).toBeNull();
    expect(Object.getPrototypeOf(second.data)).toBe(Object.prototype);
    expect(third).toBe(second);
    expect(second).toEqual({ data: { messages: { id: 'm1', body: 'b' } } });
  });

  it('shares a result with errors as it is: each answer formats the GraphQLErrors', async () => {
    const streams = await Promise.all(
      [1, 2].map(() => subscribe(argsOf('subscription { failing { id } }'))),
    );
    const [first, second] = await resultsOf(streams, { id: 'm1', body: 'b' });
    expect(runs.failing).toBe(1);
    expect(second).toBe(first);
    expect(first.errors?.[0]).toBeInstanceOf(GraphQLError);
    expect(first.errors?.[0].message).toBe('no such message');
  });

  it('answers a subscription its field refuses with the error, and no stream', async () => {
    const result = await sut.subscribe(argsOf('subscription { refused { id } }'));
    expect(result).toEqual({ errors: [expect.objectContaining({ message: 'not yours' })] });
  });

  it('ends the source when the results end, and reads nothing more', async () => {
    const stream = await subscribe(argsOf(QUERY));
    const waiting = stream.next();
    await expect(stream.return()).resolves.toEqual({ value: undefined, done: true });
    await expect(waiting).resolves.toEqual({ value: undefined, done: true });
    expect(channel.ended).toBe(1);
    expect(channel.readers.size).toBe(0);
    expect(stream[Symbol.asyncIterator]()).toBe(stream);
  });

  it('passes throw on to the source, and ends it when the source cannot throw', async () => {
    const stream = await subscribe(argsOf(QUERY));
    const failure = new Error('stop');
    await expect(stream.throw?.(failure)).rejects.toBe(failure);
    expect(channel.ended).toBe(1);
  });
});

describe(mapEvents.name, () => {
  const source = (steps: IteratorResult<unknown>[], ends: string[]) => {
    const iterator: AsyncIterableIterator<unknown> = {
      next: () => Promise.resolve(steps.shift() ?? { value: undefined, done: true }),
      return: () => {
        ends.push('return');
        return Promise.resolve({ value: 'last', done: true });
      },
      throw: (error: unknown) => {
        ends.push(`throw ${String(error)}`);
        return Promise.resolve({ value: 'thrown', done: false });
      },
      [Symbol.asyncIterator]: () => iterator,
    };
    return iterator;
  };
  const result = (value: unknown): ExecutionResult => ({ data: { value } });

  it('maps each event, and is done when the source is', async () => {
    const stream = mapEvents(source([{ value: 1, done: false }], []), result);
    await expect(stream.next()).resolves.toEqual({ value: result(1), done: false });
    await expect(stream.next()).resolves.toEqual({ value: undefined, done: true });
  });

  it('ends the source and fails with the error when a mapping throws', async () => {
    const ends: string[] = [];
    const failure = new Error('broken');
    const stream = mapEvents(source([{ value: 1, done: false }], ends), () => {
      throw failure;
    });
    await expect(stream.next()).rejects.toBe(failure);
    expect(ends).toEqual(['return']);
  });

  it("keeps the mapping's error when ending the source fails too", async () => {
    const failure = new Error('broken');
    const iterator = source([{ value: 1, done: false }], []);
    iterator.return = () => Promise.reject(new Error('cannot end'));
    const stream = mapEvents(iterator, () => Promise.reject(failure));
    await expect(stream.next()).rejects.toBe(failure);
  });

  it('passes return and throw on to a source that has them', async () => {
    const ends: string[] = [];
    const stream = mapEvents(source([], ends), result);
    await expect(stream.return()).resolves.toEqual({ value: undefined, done: true });
    await expect(stream.throw?.('why')).resolves.toEqual({ value: result('thrown'), done: false });
    expect(ends).toEqual(['return', 'throw why']);
  });

  it('is done at once on return when the source cannot end', async () => {
    const iterator = source([], []);
    delete (iterator as { return?: unknown }).return;
    await expect(mapEvents(iterator, result).return()).resolves.toEqual({
      value: undefined,
      done: true,
    });
  });
});
