import { buildSchema, parse } from 'graphql';
import { getComplexity } from 'graphql-query-complexity';
import { answerBytesEstimator } from './answer-bytes.js';

const schema = buildSchema(`
  scalar JSON
  type Query { session(id: ID!): Session, sessions(first: Int = 100): SessionConnection! }
  type Mutation { update(input: JSON): Session }
  type Session { id: ID!, title: String, name: String, extra: JSON, metadata: JSON, messageCount: Int!, messages(first: Int, last: Int): MessageConnection! }
  type SessionConnection { edges: [SessionEdge!]!, totalCount: Int! }
  type SessionEdge { node: Session! }
  type MessageConnection { edges: [MessageEdge!]! }
  type MessageEdge { node: Message! }
  type Message { content: String!, metadata: JSON, toolCalls: JSON }
`);

const sut = answerBytesEstimator({
  maxPageBytes: 10_000,
  maxMessageBytes: 1000,
  maxTitleBytes: 30,
});
const bytes = (query: string, variables: Record<string, unknown> = {}) =>
  getComplexity({ schema, query: parse(query), variables, estimators: [sut] });

describe(answerBytesEstimator.name, () => {
  it('counts a leaf by its largest value and its key, an object by its braces', () => {
    // metadata: 8 + 4 + 1000; session: 7 + 4 + (1012 + 2)
    expect(bytes('{ session(id: "a") { metadata } }')).toBe(1025);
    // title: 5 + 4 + 30; id: 2 + 4 + 256; messageCount: 12 + 4 + 32
    expect(bytes('{ session(id: "a") { title id messageCount } }')).toBe(11 + 39 + 262 + 48 + 2);
    // Any other string or JSON: 256 at most (ids, cursors, names).
    expect(bytes('{ session(id: "a") { name extra } }')).toBe(11 + 264 + 265 + 2);
  });

  it("counts a message's content, metadata and tool calls at MAX_MESSAGE_BYTES each", () => {
    const page = bytes(
      '{ session(id: "a") { messages(first: 1) { edges { node { content metadata toolCalls } } } } }',
    );
    // node: 4 + 4 + (1011 + 1012 + 1013 + 2); edges: 5 + 4 + (3046 + 2); messages: 8 + 4 + 3059
    expect(page).toBe(11 + 3071 + 2);
  });

  it('counts every alias of a root field', () => {
    expect(bytes('{ a: session(id: "a") { metadata } b: session(id: "a") { metadata } }')).toBe(
      2 * (1 + 4 + 1014),
    );
  });

  it('multiplies a page by its size, up to MAX_PAGE_BYTES and one item', () => {
    // An item: edges 5 + 4 + (node 4 + 4 + (1012 + 2) + 2) = 1033, and the braces: 1035.
    const list = (first: string) => `{ sessions${first} { edges { node { metadata } } } }`;
    expect(bytes(list('(first: 5)'))).toBe(12 + 5 * 1035);
    expect(bytes(list('(first: 9)'))).toBe(12 + 9 * 1035);
    expect(bytes(list('(first: 10)'))).toBe(12 + 10 * 1035);
    expect(bytes(list('(first: 11)'))).toBe(12 + 10_000 + 1035);
    expect(bytes(list('(first: 1000)'))).toBe(12 + 10_000 + 1035);
    // The default page size (100) counts when `first` is left out.
    expect(bytes(list(''))).toBe(12 + 10_000 + 1035);
    expect(bytes('query($n: Int) { sessions(first: $n) { totalCount } }', { n: 3 })).toBe(
      12 + 3 * (10 + 4 + 32 + 2),
    );
  });

  it("adds a mutation's arguments as JSON: what it can answer of what it was sent", () => {
    // id: 262; update: 6 + 4 + (262 + 2) + `{"input":{"a":"xy"}}` (20)
    expect(bytes('mutation { update(input: { a: "xy" }) { id } }')).toBe(294);
    // Bytes of UTF-8, not characters: é is two.
    expect(bytes('mutation { update(input: { a: "e" }) { id } }')).toBe(293);
    expect(bytes('mutation { update(input: { a: "é" }) { id } }')).toBe(294);
    // A query's arguments are not added.
    expect(bytes('{ session(id: "a-long-id") { id } }')).toBe(11 + 262 + 2);
  });
});
