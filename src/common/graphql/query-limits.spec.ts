import { buildSchema, Kind, parse, type DocumentNode } from 'graphql';
import { asScribeRoots } from '../testing/scribe-roots.js';
import { getComplexity } from 'graphql-query-complexity';
import { fullReadsEstimator, messagesReadEstimator, queryDepth } from './query-limits.js';
import { queryLimitsPlugin, refusal } from './query-limits.plugin.js';

describe(queryDepth.name, () => {
  const depth = (text: string): number => queryDepth(parse(text));

  it('counts the fields of a flat query as depth 1', () => {
    expect(depth('{ a b c }')).toBe(1);
  });

  it('counts nested fields', () => {
    expect(depth('{ a { b { c } } }')).toBe(3);
  });

  it('takes the deepest branch', () => {
    expect(depth('{ a { b } d { e { f { g } } } h }')).toBe(4);
  });

  it('does not count an inline fragment as a level, only the fields in it', () => {
    expect(depth('{ a { ... on T { b { c } } } }')).toBe(3);
    expect(depth('{ ... on Query { ... on Query { a } } }')).toBe(1);
  });

  it('counts a named fragment where it is spread', () => {
    const text = `
      query { a { b { ...F } } }
      fragment F on T { c { d } }
    `;

    expect(depth(text)).toBe(4);
  });

  it('follows fragments spread inside fragments', () => {
    const text = `
      query { a { ...F } }
      fragment F on T { b { ...G } }
      fragment G on T { c { d } }
    `;

    expect(depth(text)).toBe(4);
  });

  it('does not count a fragment that no operation spreads', () => {
    const text = `
      query { a }
      fragment Deep on T { b { c { d { e } } } }
    `;

    expect(depth(text)).toBe(1);
  });

  it('ignores a spread of an unknown fragment', () => {
    expect(depth('{ a { ...Missing } }')).toBe(1);
  });

  it('stops at a fragment cycle instead of looping', () => {
    const text = `
      query { a { ...F } }
      fragment F on T { b { ...G } }
      fragment G on T { c { ...F } }
    `;

    expect(depth(text)).toBe(3);
    expect(depth('query { a { ...Self } } fragment Self on T { b { ...Self } }')).toBe(2);
  });

  it('takes the deepest of several operations, mutations included', () => {
    const text = `
      query Shallow { a }
      mutation Deep { b { c { d } } }
    `;

    expect(depth(text)).toBe(3);
  });

  it('walks each fragment once, however often it is spread', () => {
    // F0 spreads F1 twice, F1 spreads F2 twice, ...: a small document that names 2^LEVELS
    // paths. Walking each path (rather than each fragment) turns a few hundred bytes of query
    // into minutes of CPU before the limits refuse anything.
    const LEVELS = 14;
    let text = 'query { a { ...F0 } }\n';
    for (let i = 0; i < LEVELS; i++)
      text += `fragment F${i} on T { b ...F${i + 1} ...F${i + 1} }\n`;
    text += `fragment F${LEVELS} on T { c { d } }\n`;
    const { document, reads } = countingFragmentReads(parse(text));

    expect(queryDepth(document)).toBe(3);
    expect(reads.count).toBeLessThanOrEqual(2 * (LEVELS + 1));
  });
});

/** A copy of `document` whose fragments count how often their selection set is read. */
function countingFragmentReads(document: DocumentNode): {
  document: DocumentNode;
  reads: { count: number };
} {
  const reads = { count: 0 };
  const definitions = document.definitions.map((definition) => {
    if (definition.kind !== Kind.FRAGMENT_DEFINITION) return definition;
    const { selectionSet, ...rest } = definition;
    const counted = { ...rest } as typeof definition;
    Object.defineProperty(counted, 'selectionSet', {
      enumerable: true,
      get: () => {
        reads.count += 1;
        return selectionSet;
      },
    });
    return counted;
  });
  return { document: { ...document, definitions }, reads };
}

// Mirrors the parts of schema.gql that matter: lists paged with `first`, and `messages`.
const schema = asScribeRoots(
  buildSchema(`
  type Query {
    session(id: ID!): Session
    sessions(first: Int, after: String): SessionConnection!
    some(ids: [ID!]): Boolean
  }
  type Session {
    id: ID!
    title: String
    messages(first: Int, after: String, last: Int, before: String): MessageConnection!
  }
  type SessionConnection {
    edges: [SessionEdge!]!
    totalCount: Int!
  }
  type SessionEdge {
    cursor: String!
    node: Session!
  }
  type MessageConnection {
    edges: [MessageEdge!]!
    totalCount: Int!
  }
  type MessageEdge {
    cursor: String!
    node: Message!
  }
  type Message {
    id: ID!
    content: String!
  }
  `),
);

describe(messagesReadEstimator.name, () => {
  const cost = (text: string, variables?: Record<string, unknown>): number =>
    getComplexity({
      schema,
      query: parse(text),
      variables,
      estimators: [messagesReadEstimator],
    });

  it('costs messages(first: n) n', () => {
    expect(cost('{ session(id: "s") { messages(first: 10) { totalCount } } }')).toBe(10);
  });

  it('costs messages the number asked for, whatever is selected inside', () => {
    const text = `{
      session(id: "s") {
        messages(first: 10) { totalCount edges { cursor node { id content } } }
      }
    }`;

    expect(cost(text)).toBe(10);
  });

  it('costs messages(last: n) n, and a list paged from its end by its last', () => {
    expect(cost('{ session(id: "s") { messages(last: 10) { totalCount } } }')).toBe(10);
    expect(cost('{ session(id: "s") { messages(first: 3, last: 10) { totalCount } } }')).toBe(3);
    expect(
      cost('query($n: Int) { session(id: "s") { messages(last: $n) { totalCount } } }', { n: 40 }),
    ).toBe(40);
  });

  it('costs messages without first at the default page size, 100', () => {
    expect(cost('{ session(id: "s") { messages { totalCount } } }')).toBe(100);
  });

  it('costs a query that reads no messages 0', () => {
    expect(cost('{ session(id: "s") { id title } sessions(first: 5) { totalCount } }')).toBe(0);
  });

  it('multiplies what each item of a paged list reads by its first', () => {
    const text = `{
      sessions(first: 5) { edges { node { messages(first: 7) { totalCount } } } }
    }`;

    expect(cost(text)).toBe(35);
  });

  it('multiplies by the default page size when the list has no first', () => {
    const text = '{ sessions { edges { node { messages(first: 7) { totalCount } } } } }';

    expect(cost(text)).toBe(700);
  });

  it('adds up aliased fields', () => {
    const text = `{
      a: session(id: "a") { messages(first: 10) { totalCount } }
      b: session(id: "b") { older: messages(first: 20) { totalCount } newer: messages(first: 3) { totalCount } }
      c: sessions(first: 2) { edges { node { messages(first: 4) { totalCount } } } }
    }`;

    expect(cost(text)).toBe(10 + 20 + 3 + 2 * 4);
  });

  it('honours variables', () => {
    const text = `query Page($sessions: Int, $messages: Int) {
      sessions(first: $sessions) { edges { node { messages(first: $messages) { totalCount } } } }
    }`;

    expect(cost(text, { sessions: 3, messages: 42 })).toBe(126);
    expect(cost(text, { sessions: 3 })).toBe(300);
  });
});

describe(fullReadsEstimator.name, () => {
  const reads = (text: string, variables?: Record<string, unknown>): number =>
    getComplexity({ schema, query: parse(text), variables, estimators: [fullReadsEstimator] });

  it('counts each selection of messages as one full read, whatever its first', () => {
    expect(reads('{ session(id: "s") { messages(first: 1) { totalCount } } }')).toBe(1);
    expect(reads('{ session(id: "s") { messages(first: 1000) { totalCount } } }')).toBe(1);
  });

  it('counts no read for a session without messages', () => {
    expect(reads('{ session(id: "s") { id title } sessions(first: 50) { totalCount } }')).toBe(0);
  });

  it('adds up aliases and multiplies by the first of a paged list, or its default', () => {
    const text = `{
      a: session(id: "a") { messages(first: 1) { totalCount } }
      b: session(id: "b") { x: messages { totalCount } y: messages { totalCount } }
      c: sessions(first: 3) { edges { node { messages(first: 1) { totalCount } } } }
    }`;
    expect(reads(text)).toBe(1 + 2 + 3);
    expect(reads('{ sessions { edges { node { messages { totalCount } } } } }')).toBe(100);
    expect(
      reads(
        'query($n: Int) { sessions(first: $n) { edges { node { messages { totalCount } } } } }',
        { n: 4 },
      ),
    ).toBe(4);
  });
});

describe(refusal.name, () => {
  const verdict = (text: string, maxFullReads = 10) =>
    refusal(schema, parse(text), undefined, undefined, maxFullReads);

  it('lets a query within every bound run', () => {
    expect(verdict('{ session(id: "s") { messages(first: 10) { totalCount } } }')).toBeUndefined();
  });

  it('refuses more full reads than allowed, and allows exactly that many', () => {
    const aliases = (count: number) =>
      `{ ${Array.from({ length: count }, (_, i) => `s${i}: session(id: "${i}") { messages(first: 1) { totalCount } }`).join(' ')} }`;
    expect(verdict(aliases(3), 3)).toBeUndefined();
    expect(verdict(aliases(4), 3)).toBe(
      'Query could read the transcripts of 4 sessions; the limit is 3 per request (MAX_FULL_READS_PER_REQUEST)',
    );
  });

  it('names the message cost before the full reads when both are exceeded', () => {
    expect(
      verdict(
        '{ sessions(first: 1000) { edges { node { messages(first: 1000) { totalCount } } } } }',
      ),
    ).toMatch(/^Query could read 1000000 messages/);
  });

  it("refuses a document past graphql-query-complexity's node limit instead of throwing", () => {
    const text = `{ ${Array.from({ length: 10_001 }, (_, i) => `a${i}: __typename`).join(' ')} }`;
    expect(verdict(text)).toMatch(/^Query could not be costed: /);
  });

  it('does not count introspection towards the depth limit', () => {
    let deep = 'name';
    for (let level = 0; level < 20; level++) deep = `ofType { ${deep} }`;
    expect(verdict(`{ __schema { types { fields { type { ${deep} } } } } }`)).toBeUndefined();
    expect(verdict(`{ __type(name: "Session") { fields { type { ${deep} } } } }`)).toBeUndefined();
  });
});

describe(queryLimitsPlugin.name, () => {
  const verdictFor = async (
    plugin: ReturnType<typeof queryLimitsPlugin>,
    text: string,
    document: ReturnType<typeof parse>,
    variables?: Record<string, unknown>,
  ): Promise<string | undefined> => {
    const listener = await plugin.requestDidStart!({} as never);
    try {
      await listener!.didResolveOperation!({
        request: { query: text, variables },
        document,
        schema,
        operation: document.definitions[0],
      } as never);
      return undefined;
    } catch (error) {
      return (error as Error).message;
    }
  };

  it('refuses a list variable past MAX_INPUT_LIST_ITEMS before anything coerces it', async () => {
    const plugin = queryLimitsPlugin(10);
    const text = 'query($ids: [ID!]) { some(ids: $ids) }';
    const document = parse(text);
    const ids = (count: number) => ({ ids: Array.from({ length: count }, String) });

    expect(await verdictFor(plugin, text, document, ids(1000))).toBeUndefined();
    expect(await verdictFor(plugin, text, document, ids(1001))).toBe(
      'ids holds 1001 items; a list may hold at most 1000',
    );
  });

  it("costs an operation with variables for each request's own, never from a cached verdict", async () => {
    const plugin = queryLimitsPlugin(10);
    const text =
      'query($x: Boolean!) { sessions(first: 1000) { edges { node { messages(first: 1000) @include(if: $x) { totalCount } } } } }';
    const document = parse(text);

    expect(await verdictFor(plugin, text, document, { x: false })).toBeUndefined();
    expect(await verdictFor(plugin, text, document, { x: true })).toMatch(
      /could read 1000000 messages/,
    );
  });

  it("costs a `last` that takes a variable for each request's own", async () => {
    const plugin = queryLimitsPlugin(1000);
    const text =
      'query($n: Int) { sessions(first: 1000) { edges { node { messages(last: $n) { totalCount } } } } }';
    const document = parse(text);

    expect(await verdictFor(plugin, text, document, { n: 1 })).toBeUndefined();
    expect(await verdictFor(plugin, text, document, { n: 1000 })).toMatch(
      /could read 1000000 messages/,
    );
  });

  it('leaves variables that do not fit to the executor, and does not remember that', async () => {
    const plugin = queryLimitsPlugin(10);
    const text = 'query($n: Int) { sessions(first: $n) { totalCount } }';
    const document = parse(text);

    expect(await verdictFor(plugin, text, document, { n: 'ten' })).toBeUndefined();
    expect(await verdictFor(plugin, text, document, { n: 5 })).toBeUndefined();
  });

  it('remembers the verdict on a document whose variables cannot change its cost', async () => {
    const plugin = queryLimitsPlugin(1);
    const text =
      'query($a: ID!, $b: ID!) { a: session(id: $a) { messages { totalCount } } b: session(id: $b) { messages { totalCount } } }';
    const document = parse(text);

    expect(await verdictFor(plugin, text, document, { a: 'x', b: 'y' })).toMatch(
      /transcripts of 2 sessions/,
    );
    // Remembered: the next request is not costed again (its variables would not even fit).
    expect(await verdictFor(plugin, text, document, {})).toMatch(/transcripts of 2 sessions/);
  });

  it('remembers the verdict on an operation without variables', async () => {
    const plugin = queryLimitsPlugin(1);
    const text =
      '{ a: session(id: "a") { messages { totalCount } } b: session(id: "b") { messages { totalCount } } }';
    const document = parse(text);

    expect(await verdictFor(plugin, text, document)).toMatch(/transcripts of 2 sessions/);
    expect(await verdictFor(plugin, text, document)).toMatch(/transcripts of 2 sessions/);
  });
});
