import {
  GraphQLBoolean,
  GraphQLEnumType,
  GraphQLID,
  GraphQLInputObjectType,
  GraphQLInt,
  GraphQLList,
  GraphQLNonNull,
  GraphQLObjectType,
  GraphQLScalarType,
  GraphQLSchema,
  GraphQLString,
  Kind,
  parse,
  type GraphQLInputType,
  type OperationDefinitionNode,
} from 'graphql';
import { getComplexity } from 'graphql-query-complexity';
import { GraphQLJSON } from 'graphql-scalars';
import { answerBytesEstimator } from './answer-bytes.js';
import { MutationWorstCase } from './mutation-worst-case.js';

const bounds = { maxPageBytes: 5000, maxMessageBytes: 300, maxTitleBytes: 40 };

// Names sent, values answered: as Nest registers a string enum, each value is its name.
const Role = new GraphQLEnumType({ name: 'Role', values: { USER: {}, ASSISTANT: {} } });
// One value longer than its name, one shorter.
const Mood = new GraphQLEnumType({
  name: 'Mood',
  values: { USER: { value: 'the-user-role' }, ASSISTANT: { value: 'a' } },
});
const Item = new GraphQLInputObjectType({
  name: 'Item',
  fields: {
    text: { type: new GraphQLNonNull(GraphQLString) },
    role: { type: Role },
    meta: { type: GraphQLJSON },
    count: { type: GraphQLInt },
  },
});
const Batch = new GraphQLInputObjectType({
  name: 'Batch',
  fields: {
    id: { type: new GraphQLNonNull(GraphQLID) },
    items: { type: new GraphQLNonNull(new GraphQLList(new GraphQLNonNull(Item))) },
    note: { type: GraphQLString, defaultValue: 'a default note' },
  },
});
// A scalar whose parsing is not known: what it adds cannot be bounded.
const Opaque = new GraphQLScalarType({ name: 'Opaque', parseValue: (v) => ({ wrapped: v }) });
const Tree: GraphQLInputObjectType = new GraphQLInputObjectType({
  name: 'Tree',
  fields: () => ({ label: { type: GraphQLString }, child: { type: Tree } }),
});
const Out = new GraphQLObjectType({ name: 'Out', fields: { text: { type: GraphQLString } } });
const Result = new GraphQLObjectType({
  name: 'Result',
  fields: {
    id: { type: GraphQLID },
    title: { type: GraphQLString },
    items: { type: new GraphQLList(Out) },
    page: { type: new GraphQLList(Out), args: { first: { type: GraphQLInt } } },
  },
});
const arg = (type: GraphQLInputType, defaultValue?: unknown) => ({ type, defaultValue });
const schema = new GraphQLSchema({
  query: new GraphQLObjectType({ name: 'Query', fields: { ok: { type: GraphQLBoolean } } }),
  mutation: new GraphQLObjectType({
    name: 'Mutation',
    fields: {
      append: { type: Result, args: { batch: arg(new GraphQLNonNull(Batch)) } },
      rename: { type: Result, args: { id: arg(GraphQLID), title: arg(GraphQLString) } },
      tag: { type: Result, args: { tags: arg(new GraphQLList(GraphQLString)) } },
      paged: {
        type: Result,
        args: { first: arg(GraphQLInt), last: arg(GraphQLInt), echo: arg(GraphQLBoolean, true) },
      },
      mood: { type: Result, args: { mood: arg(Mood) } },
      tree: { type: Result, args: { tree: arg(Tree) } },
      opaque: { type: Result, args: { value: arg(Opaque) } },
      flag: { type: GraphQLBoolean, args: { on: arg(GraphQLString) } },
    },
  }),
});

const partOf = (text: string) => {
  const document = parse(text);
  const operation = document.definitions.find(
    (definition): definition is OperationDefinitionNode =>
      definition.kind === Kind.OPERATION_DEFINITION,
  )!;
  return { document, operation };
};

/** What response-budget.plugin.ts computed before MutationWorstCase: always exact. */
const exactOf = (part: ReturnType<typeof partOf>, variables: Record<string, unknown>) => {
  try {
    return getComplexity({
      schema,
      query: part.document,
      variables,
      estimators: [answerBytesEstimator(bounds)],
    });
  } catch {
    return undefined;
  }
};

const admitted = (worst: number | undefined, max: number) => worst === undefined || worst <= max;

describe(MutationWorstCase.name, () => {
  const APPEND = 'mutation($b: Batch!) { append(batch: $b) { id items { text } } }';

  it('costs the first request exactly, and later ones by a bound of their JSON as sent', () => {
    const sut = new MutationWorstCase(bounds, 100_000);
    const part = partOf('mutation($id: ID) { rename(id: $id) { title } }');
    const exact = exactOf(part, { id: 'abc' });
    expect(sut.of(schema, part, { variables: { id: 'abc' } }, true)).toBe(exact);
    // The rest: rename's key, braces and title (exact less `{"id":"abc"}`, 12 bytes). Then the
    // arguments: braces 2, `"id":,` 6, `"title":,` 9, `"abc"` 5 as sent, and 2 for the quotes
    // an ID sent as a number (12345) gains when it is answered as a string.
    const structure = exact! - 12;
    expect(sut.of(schema, part, { variables: { id: 'abc' } }, true)).toBe(structure + 24);
    expect(sut.of(schema, part, { variables: { id: 12345 } }, true)).toBe(structure + 17 + 5 + 2);
    // A variable left out adds nothing; a null, its four bytes.
    expect(sut.of(schema, part, { variables: {} }, true)).toBe(structure + 17);
    expect(sut.of(schema, part, { variables: { id: null } }, true)).toBe(structure + 17 + 4 + 2);
    expect(sut.of(schema, part, {}, true)).toBe(structure + 17);
  });

  it('adds what coercion may add: a lone item made a list, an enum answered by its value', () => {
    const sut = new MutationWorstCase(bounds, 100_000);
    const tag = partOf('mutation($t: [String]) { tag(tags: $t) { id } }');
    const structure = exactOf(tag, { t: ['x'] })! - Buffer.byteLength('{"tags":["x"]}');
    sut.of(schema, tag, { variables: { t: ['x'] } }, true);
    // Braces 2, `"tags":,` 8, `"x"` 3 and two brackets.
    expect(sut.of(schema, tag, { variables: { t: 'x' } }, true)).toBe(structure + 10 + 3 + 2);
    expect(exactOf(tag, { t: 'x' })).toBe(structure + 14);

    const role = partOf('mutation($r: Mood) { mood(mood: $r) { id } }');
    const roleStructure =
      exactOf(role, { r: 'USER' })! - Buffer.byteLength('{"mood":"the-user-role"}');
    sut.of(schema, role, { variables: { r: 'ASSISTANT' } }, true);
    // `"the-user-role"` is 15 bytes, `"USER"` 6: a Mood may grow by 9.
    expect(sut.of(schema, role, { variables: { r: 'USER' } }, true)).toBe(
      roleStructure + 10 + 6 + 9,
    );
    expect(exactOf(role, { r: 'USER' })).toBe(roleStructure + 24);
  });

  it("adds an input field's default and an argument's default, sent or not", () => {
    const sut = new MutationWorstCase(bounds, 100_000);
    const part = partOf(APPEND);
    const batch = { id: 'b', items: [{ text: 'hi' }] };
    const exact = exactOf(part, { b: batch })!;
    // Coerced: `{"batch":{"id":"b","items":[{"text":"hi"}],"note":"a default note"}}`.
    const argumentBytes = 68;
    expect(sut.of(schema, part, { variables: { b: batch } }, true)).toBe(exact);
    const sent = Buffer.byteLength(JSON.stringify(batch));
    // Braces 2, `"batch":,` 9; the batch as sent; the id's quotes 2, the list's brackets 2,
    // and `"note":"a default note",` 24. An item grows by nothing (its Role answers its name).
    const bound = sut.of(schema, part, { variables: { b: batch } }, true);
    expect(bound).toBe(exact - argumentBytes + 11 + sent + 2 + 2 + 24);

    const paged = partOf('mutation { paged(first: 3) { id } }');
    const pagedExact = exactOf(paged, {})!;
    sut.of(schema, paged, {}, true);
    // `{"first":3,"echo":true}` is 23; bounded: braces 2, keys 9 + 8 + 8, 3 is 1, true is 4.
    expect(sut.of(schema, paged, {}, true)).toBe(pagedExact - 23 + 32);
  });

  it('gives the exact cost once the bound passes the limit, and the same decision', () => {
    const part = partOf(APPEND);
    const small = { b: { id: 'b', items: [{ text: 'x'.repeat(10) }] } };
    const large = { b: { id: 'b', items: [{ text: 'x'.repeat(400) }] } };
    const max = exactOf(part, large)! - 1;
    const sut = new MutationWorstCase(bounds, max);
    expect(sut.of(schema, part, { variables: small }, true)).toBe(exactOf(part, small));
    // Learned: the small one now by its bound, the large one exactly (its refusal names it).
    expect(sut.of(schema, part, { variables: small }, true)).toBeGreaterThan(exactOf(part, small)!);
    expect(sut.of(schema, part, { variables: large }, true)).toBe(max + 1);
    // Just under the limit, where the bound passes it and the exact cost does not: admitted.
    const near = { b: { id: 'b', items: [{ text: 'x'.repeat(398) }] } };
    expect(exactOf(part, near)).toBeLessThanOrEqual(max);
    expect(sut.of(schema, part, { variables: near }, true)).toBe(exactOf(part, near));
  });

  it('admits on a bound equal to the limit', () => {
    const part = partOf('mutation($id: ID) { rename(id: $id) { title } }');
    const exact = exactOf(part, { id: 'abc' })!;
    // The bound of a request with `abc` is 12 bytes over its exact cost (see above).
    const sut = new MutationWorstCase(bounds, exact + 12);
    sut.of(schema, part, { variables: { id: 'abc' } }, true);
    expect(sut.of(schema, part, { variables: { id: 'abc' } }, true)).toBe(exact + 12);
    expect(sut.of(schema, part, { variables: { id: 'abcd' } }, true)).toBe(exact + 1);
  });

  it('bounds an operation with __typename among its root fields', () => {
    const sut = new MutationWorstCase(bounds, 100_000);
    const part = partOf('mutation($id: ID) { __typename rename(id: $id) { id } }');
    const exact = exactOf(part, { id: 'abc' })!;
    expect(sut.of(schema, part, { variables: { id: 'abc' } }, true)).toBe(exact);
    expect(sut.of(schema, part, { variables: { id: 'abc' } }, true)).toBe(exact + 12);
  });

  it('answers undefined, as before, for variables that do not fit their types', () => {
    const sut = new MutationWorstCase(bounds, 100_000);
    const part = partOf(APPEND);
    expect(sut.of(schema, part, { variables: { b: { id: 'b' } } }, true)).toBeUndefined();
    expect(sut.of(schema, part, { variables: { b: { id: 'b', items: [] } } }, true)).toBe(
      exactOf(part, { b: { id: 'b', items: [] } }),
    );
    const tooLarge = new MutationWorstCase(bounds, 10);
    tooLarge.of(schema, part, { variables: { b: { id: 'b', items: [] } } }, true);
    expect(tooLarge.of(schema, part, { variables: { b: { id: 7 } } }, true)).toBeUndefined();
  });

  it('costs exactly variables that are not the body as JSON.parse made it', () => {
    const sut = new MutationWorstCase(bounds, 100_000);
    const part = partOf(APPEND);
    const batch = { id: 'b', items: [{ text: 'hi' }] };
    sut.of(schema, part, { variables: { b: batch } }, true);
    expect(sut.of(schema, part, { variables: { b: batch } }, false)).toBe(
      exactOf(part, { b: batch }),
    );
    // JSON cannot hold it: no bound is made of it.
    expect(sut.of(schema, part, { variables: { b: undefined } }, true)).toBeUndefined();
  });

  it('costs exactly what JSON.stringify throws on: a BigInt, a nesting it cannot recurse', () => {
    // A host's own body parser, ahead of Scribe's depth check, may pass either as "plain".
    const sut = new MutationWorstCase(bounds, 100_000);
    const part = partOf('mutation($b: Batch!) { append(batch: $b) { id } }');
    const item = (meta: unknown) => ({ b: { id: 'b', items: [{ text: 'hi', meta }] } });
    sut.of(schema, part, { variables: item(1) }, true);
    const deep = JSON.parse('['.repeat(100_000) + ']'.repeat(100_000)) as unknown;
    expect(() => JSON.stringify(deep)).toThrow(RangeError);
    expect(sut.of(schema, part, { variables: item(deep) }, true)).toBe(exactOf(part, item(deep)));
    expect(sut.of(schema, part, { variables: item(10n) }, true)).toBe(exactOf(part, item(10n)));
    expect(exactOf(part, item(10n))).toBeUndefined();
  });

  it("costs exactly in a schema other than the one an operation's shape was learned in", () => {
    const sut = new MutationWorstCase(bounds, 100_000);
    const part = partOf(APPEND);
    const batch = { id: 'b', items: [{ text: 'hi' }] };
    sut.of(schema, part, { variables: { b: batch } }, true);
    const other = new GraphQLSchema(schema.toConfig());
    const exact = getComplexity({
      schema: other,
      query: part.document,
      variables: { b: batch },
      estimators: [answerBytesEstimator(bounds)],
    });
    expect(sut.of(other, part, { variables: { b: batch } }, true)).toBe(exact);
    // The shape learned in the first schema is kept for it.
    expect(sut.of(schema, part, { variables: { b: batch } }, true)).toBeGreaterThan(exact);
  });

  describe('costs exactly, every time, an operation whose variables reach beyond root arguments', () => {
    const cases: [string, string, Record<string, unknown>][] = [
      [
        'a directive',
        'mutation($id: ID, $c: Boolean!) { rename(id: $id) { title @include(if: $c) } }',
        { id: 'a', c: true },
      ],
      [
        'a nested field',
        'mutation($id: ID, $n: Int) { rename(id: $id) { page(first: $n) { text } } }',
        { id: 'a', n: 3 },
      ],
      [
        'a fragment',
        'mutation($id: ID, $c: Boolean!) { rename(id: $id) { ...F } } fragment F on Result { title @skip(if: $c) }',
        { id: 'a', c: false },
      ],
      [
        'a literal',
        'mutation($t: String!) { append(batch: { id: "b", items: [{ text: $t }] }) { id } }',
        { t: 'hi' },
      ],
      ['a default', 'mutation($id: ID = "x") { rename(id: $id) { id } }', { id: 'a' }],
      ['a page size', 'mutation($n: Int) { paged(first: $n) { id } }', { n: 2 }],
      ['a page size from the end', 'mutation($n: Int) { paged(last: $n) { id } }', { n: 2 }],
      [
        'a scalar of unknown parsing',
        'mutation($v: Opaque) { opaque(value: $v) { id } }',
        { v: 1 },
      ],
      ['a recursive input', 'mutation($t: Tree) { tree(tree: $t) { id } }', { t: { label: 'a' } }],
      ['a list of what may grow', 'mutation($r: [Mood]) { tag(tags: $r) { id } }', { r: ['USER'] }],
    ];

    it.each(cases)('%s', (_name, text, variables) => {
      const sut = new MutationWorstCase(bounds, 100_000);
      const part = partOf(text);
      const exact = exactOf(part, variables);
      expect(sut.of(schema, part, { variables }, true)).toBe(exact);
      expect(sut.of(schema, part, { variables }, true)).toBe(exact);
    });
  });

  it('bounds only the arguments a leaf field does not answer, and root fields by alias', () => {
    const sut = new MutationWorstCase(bounds, 100_000);
    const part = partOf(
      'mutation($on: String, $id: ID) { flag(on: $on) a: rename(id: $id) { id } b: rename(id: $id) { id } }',
    );
    const variables = { on: 'x'.repeat(50), id: 'i' };
    const exact = exactOf(part, variables)!;
    sut.of(schema, part, { variables }, true);
    // `flag` is a leaf: its argument is not in its worst case, nor in the bound. Each alias
    // of rename: `{"id":"i"}` (10) exactly, bounded as 2 + 6 + 9 + 3 + 2 (22).
    expect(sut.of(schema, part, { variables }, true)).toBe(exact - 20 + 44);
  });

  it('never decides otherwise than the exact cost (random requests near the limit)', () => {
    let seed = 7;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const pick = <T>(items: readonly T[]) => items[Math.floor(random() * items.length)];
    const text = () =>
      pick(['', 'hi', 'é', '\u0000', '\ud800', '"quoted"', 'x'.repeat(Math.floor(random() * 200))]);
    const value = (): unknown =>
      pick([
        () => text(),
        () => Math.floor(random() * 1e6),
        () => null,
        () => ({ nested: [text(), random()] }),
        () => [true, text()],
      ])();
    const item = () => ({
      text: text(),
      ...(random() < 0.5 ? { role: pick(['USER', 'ASSISTANT', 'NOBODY']) } : {}),
      ...(random() < 0.5 ? { meta: value() } : {}),
      ...(random() < 0.3 ? { count: pick([1, 2.5, -0, 2 ** 40]) } : {}),
    });
    const batch = () => ({
      id: pick<unknown>(['b', 42, 'long-id-'.repeat(5), 1.5]),
      items: random() < 0.1 ? item() : Array.from({ length: Math.floor(random() * 4) }, item),
      ...(random() < 0.3 ? { note: pick([null, text()]) } : {}),
    });
    const documents = [
      APPEND,
      'mutation($b: Batch!, $c: Batch!) { x: append(batch: $b) { id } y: append(batch: $c) { title } }',
      'mutation($id: ID, $t: String) { rename(id: $id, title: $t) { id title } }',
      'mutation($t: [String]) { tag(tags: $t) { id } flag(on: "x") }',
    ].map(partOf);
    let bounded = 0;
    for (const max of [150, 400, 900, 2000]) {
      const sut = new MutationWorstCase(bounds, max);
      for (let i = 0; i < 400; i++) {
        const part = pick(documents);
        const variables = {
          b: batch(),
          c: batch(),
          id: pick([text(), 7]),
          t: pick([text(), [text()]]),
        };
        const exact = exactOf(part, variables);
        const worst = sut.of(schema, part, { variables }, true);
        expect({ i, max, admitted: admitted(worst, max) }).toEqual({
          i,
          max,
          admitted: admitted(exact, max),
        });
        if (exact !== undefined && worst !== undefined) expect(worst).toBeGreaterThanOrEqual(exact);
        if (worst !== undefined && worst > max) expect(worst).toBe(exact);
        if (worst !== exact) bounded += 1;
      }
    }
    // Most were admitted on their bound, not costed exactly.
    expect(bounded).toBeGreaterThan(400);
  });
});
