import { buildSchema, parse, validate } from 'graphql';
import { ScribeErrorCode } from '../errors/scribe-error-code.js';
import { repeatedFieldsRule } from './repeated-fields.rule.js';

const schema = buildSchema(`
  type Query { session(id: ID!): Session, ping: String }
  type Session { id: ID!, content(size: Int): String, title: String }
`);

const errorsOf = (text: string) =>
  validate(schema, parse(text), [repeatedFieldsRule]).map((error) => ({
    message: error.message,
    code: error.extensions.code,
  }));

describe('repeatedFieldsRule', () => {
  it('refuses one field with the same arguments under two aliases', () => {
    expect(errorsOf('{ session(id: "a") { c0: content c1: content } }')).toEqual([
      {
        message: 'content is selected as both c0 and c1: select a field once',
        code: ScribeErrorCode.QueryTooComplex,
      },
    ]);
    expect(errorsOf('{ session(id: "a") { content c1: content } }')).toHaveLength(1);
  });

  it('finds the repeat through inline fragments and named ones, whichever way it is spread', () => {
    expect(
      errorsOf('{ session(id: "a") { c0: content ... on Session { c1: content } } }'),
    ).toHaveLength(1);
    // Across two fragments: only the selection set that spreads both sees the repeat.
    expect(
      errorsOf(
        '{ session(id: "a") { ...A ...B } } fragment A on Session { c0: content } fragment B on Session { c1: content }',
      ),
    ).toEqual([
      {
        message: 'content is selected as both c0 and c1: select a field once',
        code: ScribeErrorCode.QueryTooComplex,
      },
    ]);
  });

  it('leaves root fields to the bounds on full reads', () => {
    expect(errorsOf('{ a: ping b: ping }')).toEqual([]);
    expect(errorsOf('{ a: session(id: "a") { id } b: session(id: "a") { id } }')).toEqual([]);
  });

  it('lets the same field through with other arguments, or under one name however often', () => {
    expect(errorsOf('{ a: session(id: "a") { id } b: session(id: "b") { id } }')).toEqual([]);
    expect(errorsOf('{ session(id: "a") { x: content(size: 1) y: content(size: 2) } }')).toEqual(
      [],
    );
    expect(
      errorsOf('{ session(id: "a") { content content ...A } } fragment A on Session { content }'),
    ).toEqual([]);
  });

  it('follows each named fragment once, even a cycle (refused elsewhere)', () => {
    const cyclic = parse(
      '{ session(id: "a") { ...A } } fragment A on Session { id ...B } fragment B on Session { title ...A }',
    );
    expect(validate(schema, cyclic, [repeatedFieldsRule])).toEqual([]);
    expect(errorsOf('{ session(id: "a") { ...Missing } }')).toEqual([]);
  });
});
