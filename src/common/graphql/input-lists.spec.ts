import { buildSchema, parse, type OperationDefinitionNode } from 'graphql';
import { ScribeErrorCode } from '../errors/scribe-error-code.js';
import { MAX_INPUT_LIST_ITEMS, inputListTooLongError, oversizedInputList } from './input-lists.js';

const schema = buildSchema(`
  scalar JSON
  input Message { content: String!, tags: [String!], metadata: JSON }
  input Batch { sessionId: ID!, messages: [Message!]! }
  type Query { ok(batch: Batch, ids: [[ID!]], one: [ID!]): Boolean }
`);

function problemOf(variables: Record<string, unknown> | undefined, max = 3): string | undefined {
  const operation = parse(
    'query($batch: Batch, $ids: [[ID!]], $one: [ID!], $unknown: Nope) { ok(batch: $batch, ids: $ids, one: $one) }',
    { noLocation: true },
  ).definitions[0] as OperationDefinitionNode;
  return oversizedInputList(schema, operation, variables, max);
}

const messages = (count: number) => Array.from({ length: count }, () => ({ content: 'x' }));

describe('oversizedInputList', () => {
  it('allows no more than 1,000 items by default: the largest batch appendMessages takes', () => {
    expect(MAX_INPUT_LIST_ITEMS).toBe(1000);
    const operation = parse('query($one: [ID!]) { ok(one: $one) }')
      .definitions[0] as OperationDefinitionNode;
    const ids = (count: number) => ({ one: Array.from({ length: count }, String) });
    expect(oversizedInputList(schema, operation, ids(1000))).toBeUndefined();
    expect(oversizedInputList(schema, operation, ids(1001))).toBe(
      'one holds 1001 items; a list may hold at most 1000',
    );
  });

  it('finds a list inside an input object, and names its path', () => {
    expect(problemOf({ batch: { sessionId: 's', messages: messages(3) } })).toBeUndefined();
    expect(problemOf({ batch: { sessionId: 's', messages: messages(4) } })).toBe(
      'batch.messages holds 4 items; a list may hold at most 3',
    );
  });

  it('finds a list inside the items of a list', () => {
    const tagged = [{ content: 'x' }, { content: 'y', tags: ['a', 'b', 'c', 'd'] }];
    expect(problemOf({ batch: { sessionId: 's', messages: tagged } })).toBe(
      'batch.messages.1.tags holds 4 items; a list may hold at most 3',
    );
    expect(problemOf({ ids: [['a'], ['a', 'b', 'c', 'd']] })).toBe(
      'ids.1 holds 4 items; a list may hold at most 3',
    );
  });

  it('never enters free-form JSON, whatever it holds', () => {
    const metadata = { list: Array.from({ length: 100 }, (_, i) => i) };
    expect(
      problemOf({ batch: { sessionId: 's', messages: [{ content: 'x', metadata }] } }),
    ).toBeUndefined();
  });

  it('leaves missing, null and mistyped values to the executor', () => {
    expect(problemOf(undefined)).toBeUndefined();
    expect(problemOf({ batch: null, ids: null })).toBeUndefined();
    expect(problemOf({ batch: 'not an object', one: 'a' })).toBeUndefined();
    expect(problemOf({ batch: [1, 2, 3, 4, 5] })).toBeUndefined();
    expect(problemOf({ unknown: [1, 2, 3, 4, 5] })).toBeUndefined();
  });

  it('walks a single value given for a list as the list of one it is coerced to', () => {
    const single = { content: 'x', tags: ['a', 'b', 'c', 'd'] };
    expect(problemOf({ batch: { sessionId: 's', messages: single } })).toBe(
      'batch.messages.tags holds 4 items; a list may hold at most 3',
    );
    expect(problemOf({ ids: ['a', 'b', 'c', 'd'] })).toBe(
      'ids holds 4 items; a list may hold at most 3',
    );
  });

  it("is refused as the client's input, with HTTP 400", () => {
    const error = inputListTooLongError('x holds 2 items');
    expect(error.message).toBe('x holds 2 items');
    expect(error.extensions).toEqual({ code: ScribeErrorCode.BadUserInput, http: { status: 400 } });
  });

  it('finds a list reached through a recursive input type, from either end', () => {
    const recursive = buildSchema(`
      input X { y: Y, l: [Int] }
      input Y { x: X }
      input Z { z: Z, n: Int }
      type Query { a(x: X, y: Y, z: Z): Boolean }
    `);
    const operation = parse('query($x: X, $y: Y, $z: Z) { a(x: $x, y: $y, z: $z) }')
      .definitions[0] as OperationDefinitionNode;
    // X is worked out first, meeting Y on the way: Y must not be taken to hold no list.
    const variables = { x: { l: [1] }, y: { x: { l: [1, 2, 3, 4] } } };
    expect(oversizedInputList(recursive, operation, variables, 3)).toBe(
      'y.x.l holds 4 items; a list may hold at most 3',
    );
    expect(oversizedInputList(recursive, operation, { z: { z: { n: 1 } } }, 3)).toBeUndefined();
  });

  it('never walks the fields of items that cannot hold a list', () => {
    let reads = 0;
    const item = new Proxy(
      { content: 'x' },
      {
        get: (target, key) => {
          reads += 1;
          return Reflect.get(target, key);
        },
      },
    );
    const flat = buildSchema(`
      input Flat { content: String!, metadata: JSON }
      scalar JSON
      type Query { a(items: [Flat!]): Boolean }
    `);
    const operation = parse('query($items: [Flat!]) { a(items: $items) }')
      .definitions[0] as OperationDefinitionNode;
    expect(oversizedInputList(flat, operation, { items: [item, item] }, 3)).toBeUndefined();
    expect(reads).toBe(0);
  });
});
