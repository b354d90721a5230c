import { buildSchema, parse, type OperationDefinitionNode } from 'graphql';
import { FIELD_SCOPE } from '../auth/field-scope.js';
import { operationsOf, SCHEMA_WITH_HOST_FIELDS } from '../testing/scribe-roots.js';
import { hostResponseKeys, isScribeRootField } from './scribe-fields.js';

const schema = SCHEMA_WITH_HOST_FIELDS;
const operations = operationsOf;

describe(isScribeRootField.name, () => {
  const document = parse('{ session } mutation M { append } subscription S { x }');
  const [query, mutation, subscription] = operations(document);

  it("counts a root field that declares a scope as Scribe's", () => {
    expect(isScribeRootField(schema, query, 'session')).toBe(true);
    expect(isScribeRootField(schema, mutation, 'append')).toBe(true);
  });

  it("counts a root field that declares none as the host's", () => {
    expect(isScribeRootField(schema, query, 'hostUser')).toBe(false);
    expect(isScribeRootField(schema, mutation, 'hostSave')).toBe(false);
  });

  it("looks the field up on the operation's own root type", () => {
    // `append` is Scribe's on Mutation, and no field of Query.
    expect(isScribeRootField(schema, query, 'append')).toBe(false);
    expect(isScribeRootField(schema, mutation, 'session')).toBe(false);
  });

  it('counts no field of a root type the schema lacks, nor an unknown field', () => {
    expect(isScribeRootField(schema, subscription, 'session')).toBe(false);
    expect(isScribeRootField(schema, query, 'nothing')).toBe(false);
  });

  it("counts every field of a root type whose type declares the scope (the type's own)", () => {
    const typed = buildSchema('type Query { a: Int }');
    (typed.getQueryType() as { extensions: object }).extensions = { [FIELD_SCOPE]: 'read' };
    expect(isScribeRootField(typed, query, 'a')).toBe(true);
  });
});

describe(hostResponseKeys.name, () => {
  function keys(query: string, name?: string): string[] {
    const document = parse(query);
    const operation = operations(document).find(
      (node) => name === undefined || node.name?.value === name,
    ) as OperationDefinitionNode;
    return [...hostResponseKeys(schema, document, operation)].sort();
  }

  it("names the host's root fields, by alias where there is one", () => {
    expect(keys('{ session hostUser clock: hostClock __typename }')).toEqual(['clock', 'hostUser']);
    expect(keys('mutation { append saved: hostSave }')).toEqual(['saved']);
  });

  it("is empty for an operation of Scribe's fields only", () => {
    expect(keys('{ session s: sessions __typename }')).toEqual([]);
  });

  it('finds them in inline fragments and fragments, each fragment once', () => {
    expect(
      keys(`
        { ... on Query { hostUser session } ...F ...F ...Missing }
        fragment F on Query { c: hostClock ...Loop }
        fragment Loop on Query { loop: hostUser ...Loop }
      `),
    ).toEqual(['c', 'hostUser', 'loop']);
  });

  it('judges the operation asked for, of a document of several', () => {
    const query = 'query A { hostUser } query B { session hostClock } mutation C { hostSave }';
    expect(keys(query, 'A')).toEqual(['hostUser']);
    expect(keys(query, 'B')).toEqual(['hostClock']);
    expect(keys(query, 'C')).toEqual(['hostSave']);
  });

  it("looks the fields up on the operation's root type", () => {
    // `session` is no field of Mutation: a host's there, as far as this can tell.
    expect(keys('mutation { session append }')).toEqual(['session']);
  });
});
