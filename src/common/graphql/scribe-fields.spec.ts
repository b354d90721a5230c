import { parse, print, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';
import {
  HOST_FIELDS_SDL,
  operationsOf,
  SCHEMA_WITH_HOST_FIELDS,
  schemaWithHostFields,
} from '../testing/scribe-roots.js';
import { isMetaField, operationAlone, scribePart, withoutHostFields } from './scribe-fields.js';

const schema = SCHEMA_WITH_HOST_FIELDS;
const operations = operationsOf;

/** Scribe's part of the first (or named) operation of `query`, printed, or undefined. */
function partOf(query: string, name?: string, on: GraphQLSchema = schema): string | undefined {
  const document = parse(query);
  const operation = operations(document).find(
    (node) => name === undefined || node.name?.value === name,
  );
  const part = scribePart(on, document, operation as OperationDefinitionNode);
  return part && print(part.document);
}

const printed = (query: string) => print(parse(query));

describe(scribePart.name, () => {
  it('returns a document of Scribe fields only as it came, the same objects', () => {
    const document = parse('query Q { session sessions __typename }');
    const [operation] = operations(document);
    const part = scribePart(schema, document, operation);
    expect(part?.document).toBe(document);
    expect(part?.operation).toBe(operation);
  });

  it("is undefined for an operation that names none of Scribe's fields", () => {
    expect(partOf('{ hostUser hostClock }')).toBeUndefined();
    expect(partOf('mutation { hostSave }')).toBeUndefined();
    expect(partOf('{ ... on Query { hostUser } }')).toBeUndefined();
  });

  it("leaves the host's root fields out, wherever they stand", () => {
    expect(partOf('{ hostUser session hostClock }')).toBe(printed('{ session }'));
    // Scribe's first: kept is a prefix of the selections, still not the same.
    expect(partOf('{ session sessions hostUser }')).toBe(printed('{ session sessions }'));
    expect(partOf('{ session: hostUser s: session }')).toBe(printed('{ s: session }'));
  });

  it('keeps __typename, and the field arguments, directives and aliases as written', () => {
    expect(partOf('{ t: __typename hostUser session @include(if: true) }')).toBe(
      printed('{ t: __typename session @include(if: true) }'),
    );
  });

  it('does not change the document it was given', () => {
    const query = 'query Q { hostUser session }';
    const document = parse(query);
    const [operation] = operations(document);
    const part = scribePart(schema, document, operation);
    expect(part?.document).not.toBe(document);
    expect(print(document)).toBe(printed(query));
    expect(part?.operation.name?.value).toBe('Q');
    expect(part?.document.definitions).toContain(part?.operation);
  });

  it('turns the spread of a mixed fragment into an inline fragment, keeping the fragment', () => {
    const query = `
      query Q { ...Both @skip(if: false) }
      fragment Both on Query { hostUser session }
    `;
    expect(partOf(query)).toBe(
      printed(`
        query Q { ... on Query @skip(if: false) { session } }
        fragment Both on Query { hostUser session }
      `),
    );
  });

  it("keeps the spread of a fragment of Scribe's fields as written, drops a host's", () => {
    expect(
      partOf(`
        { ...Mine ...Theirs hostClock }
        fragment Mine on Query { session }
        fragment Theirs on Query { hostUser }
      `),
    ).toBe(
      printed(`
        { ...Mine }
        fragment Mine on Query { session }
        fragment Theirs on Query { hostUser }
      `),
    );
  });

  it('rewrites an inline fragment, keeping its type condition and directives', () => {
    expect(partOf('{ ... on Query @include(if: true) { hostUser session } }')).toBe(
      printed('{ ... on Query @include(if: true) { session } }'),
    );
    expect(partOf('{ ... { hostUser sessions } }')).toBe(printed('{ ... { sessions } }'));
    expect(partOf('{ hostUser ... on Query { session } }')).toBe(
      printed('{ ... on Query { session } }'),
    );
  });

  it('rewrites fragments nested in fragments', () => {
    expect(
      partOf(`
        { ...Outer }
        fragment Outer on Query { hostUser ...Inner }
        fragment Inner on Query { hostClock session }
      `),
    ).toBe(
      printed(`
        { ... on Query { ... on Query { session } } }
        fragment Outer on Query { hostUser ...Inner }
        fragment Inner on Query { hostClock session }
      `),
    );
  });

  it('drops the spread of an unknown fragment and stops at a fragment that spreads itself', () => {
    expect(partOf('{ hostUser session ...Missing }')).toBe(printed('{ session }'));
    expect(
      partOf(`
        { hostUser ...Loop }
        fragment Loop on Query { session ...Loop }
      `),
    ).toBe(
      printed(`
        { ... on Query { session } }
        fragment Loop on Query { session ...Loop }
      `),
    );
  });

  it('judges the operation asked for, of a document of several', () => {
    const query = `
      query Host { hostUser }
      query Mixed { hostClock sessions }
      query Mine { session }
      mutation Save { hostSave append }
    `;
    expect(partOf(query, 'Host')).toBeUndefined();
    const document = parse(query);
    const [, mixedOperation, mine, save] = operations(document);
    const mixed = scribePart(schema, document, mixedOperation);
    expect(print(mixed?.operation as OperationDefinitionNode)).toBe(
      printed('query Mixed { sessions }'),
    );
    // Every operation is rewritten, the one asked for picked: one document for them all.
    expect(scribePart(schema, document, mine)?.document).toBe(mixed?.document);
    expect(scribePart(schema, document, mine)?.operation).toBe(mine);
    expect(print(scribePart(schema, document, save)?.operation as OperationDefinitionNode)).toBe(
      printed('mutation Save { append }'),
    );
  });

  it('prints the operation asked for without the host fields', () => {
    const query = 'query Host { hostUser } query Mixed { hostClock sessions }';
    const mixed = partOf(query, 'Mixed');
    expect(mixed).toContain('query Mixed {\n  sessions\n}');
    expect(mixed).not.toContain('hostClock');
  });

  it('picks the operation of the rewritten document at the same place', () => {
    const document = parse('query A { hostUser session } query B { hostClock sessions }');
    const [, b] = operations(document);
    const part = scribePart(schema, document, b);
    expect(part?.operation.name?.value).toBe('B');
    expect(print(part?.operation as OperationDefinitionNode)).toBe(printed('query B { sessions }'));
  });

  it('is undefined for an operation that is not of the document', () => {
    const document = parse('{ session }');
    const [other] = operations(parse('{ session }'));
    expect(scribePart(schema, document, other)).toBeUndefined();
  });

  it('rewrites a document once per schema, and again for another schema', () => {
    const document = parse('query A { hostUser session } query B { sessions }');
    const [a, b] = operations(document);
    const first = scribePart(schema, document, a);
    expect(scribePart(schema, document, a)?.document).toBe(first?.document);
    expect(scribePart(schema, document, b)?.document).toBe(first?.document);

    // In this schema `hostUser` is Scribe's: nothing to leave out.
    const other = schemaWithHostFields(HOST_FIELDS_SDL, [
      'Query.session',
      'Query.sessions',
      'Query.hostUser',
    ]);
    expect(scribePart(other, document, a)?.document).toBe(document);
    expect(scribePart(schema, document, a)?.document).toBe(first?.document);
  });

  it('keeps the fragment definitions and every other definition as they were', () => {
    const document = parse(`
      query A { hostUser ...F }
      fragment F on Query { session }
    `);
    const [a] = operations(document);
    const part = scribePart(schema, document, a);
    expect(part?.document.definitions[1]).toBe(document.definitions[1]);
  });
});

describe('meta fields (__typename, __schema, __type)', () => {
  it('are the meta fields, and no other field is', () => {
    for (const name of ['__typename', '__schema', '__type']) expect(isMetaField(name)).toBe(true);
    for (const name of ['session', 'hostUser', 'type_', 'a__b']) {
      expect(isMetaField(name)).toBe(false);
    }
  });

  it("make no operation Scribe's: beside the host's fields only, it is the host's", () => {
    expect(partOf('{ hostUser __typename }')).toBeUndefined();
    expect(partOf('{ __typename }')).toBeUndefined();
    expect(partOf('{ a: __typename b: __typename hostUser }')).toBeUndefined();
    expect(partOf('{ hostUser __schema { queryType { name } } }')).toBeUndefined();
    expect(partOf('{ __type(name: "Query") { name } hostClock }')).toBeUndefined();
    expect(partOf('mutation { hostSave __typename }')).toBeUndefined();
  });

  it('make none through fragments either', () => {
    expect(partOf('{ hostUser ... on Query { __typename } }')).toBeUndefined();
    expect(partOf('{ hostUser ...T } fragment T on Query { __typename }')).toBeUndefined();
    expect(
      partOf(
        '{ ...Outer } fragment Outer on Query { ...T hostUser } fragment T on Query { __typename }',
      ),
    ).toBeUndefined();
    expect(partOf('{ ...Loop } fragment Loop on Query { __typename ...Loop }')).toBeUndefined();
  });

  it("keep __typename in the part of an operation with Scribe's fields, wherever it stands", () => {
    expect(partOf('{ hostUser __typename session }')).toBe(printed('{ __typename session }'));
    expect(partOf('{ ...F } fragment F on Query { __typename ... on Query { session } }')).toBe(
      printed('{ ...F } fragment F on Query { __typename ... on Query { session } }'),
    );
  });

  it('judge the operation asked for, of a document of several', () => {
    const document = parse('query Meta { __typename hostUser } query Mine { __typename session }');
    const [meta, mine] = operations(document);
    expect(scribePart(schema, document, meta)).toBeUndefined();
    expect(print(scribePart(schema, document, mine)?.operation as OperationDefinitionNode)).toBe(
      printed('query Mine { __typename session }'),
    );
  });
});

describe(withoutHostFields.name, () => {
  it("keeps __typename, even alone: what Scribe's own endpoint judges of any operation", () => {
    const document = parse('{ hostUser t: __typename }');
    const [operation] = operations(document);
    expect(print(withoutHostFields(schema, document, operation)?.operation as never)).toBe(
      printed('{ t: __typename }'),
    );
    expect(scribePart(schema, document, operation)).toBeUndefined();
  });

  it('is undefined when nothing is left, and the same as scribePart otherwise', () => {
    const document = parse('query A { hostUser } query B { hostUser session }');
    const [a, b] = operations(document);
    expect(withoutHostFields(schema, document, a)).toBeUndefined();
    expect(withoutHostFields(schema, document, b)).toEqual(scribePart(schema, document, b));
  });
});

describe(operationAlone.name, () => {
  it('keeps the operation and every fragment, and no other operation', () => {
    const document = parse(`
      query A { hostUser ...F }
      query B { session }
      fragment F on Query { hostClock }
    `);
    const [a] = operations(document);
    const only = operationAlone(document, a);
    expect(only.definitions).toEqual([a, document.definitions[2]]);
    expect(operationAlone(document, a)).toBe(only);
  });
});
