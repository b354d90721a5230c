import { GraphQLDateTime } from 'graphql-scalars';
import { Kind } from 'graphql';
import { DateTime } from './date-time.scalar.js';

describe('DateTime', () => {
  it("writes a date as its ISO string, the string JSON.stringify wrote for graphql-scalars' Date", () => {
    const moment = new Date(Date.UTC(2025, 0, 2, 3, 4, 5, 6));

    expect(DateTime.serialize(moment)).toBe('2025-01-02T03:04:05.006Z');
    expect(JSON.stringify({ at: DateTime.serialize(moment) })).toBe(
      JSON.stringify({ at: GraphQLDateTime.serialize(moment) }),
    );
    expect(DateTime.serialize(moment.getTime())).toBe('2025-01-02T03:04:05.006Z');
  });

  it('refuses what is no date, as graphql-scalars does', () => {
    expect(() => DateTime.serialize(new Date(Number.NaN))).toThrow('invalid Date');
    expect(() => DateTime.serialize({})).toThrow('non string, non numeric or non Date');
  });

  it("is graphql-scalars' DateTime in the schema, and reads input as it does", () => {
    expect(DateTime.name).toBe('DateTime');
    expect(DateTime.description).toBe(GraphQLDateTime.description);
    expect(DateTime.specifiedByURL).toBe(GraphQLDateTime.specifiedByURL);
    expect(DateTime.parseValue('2025-01-02T03:04:05.006Z')).toEqual(
      new Date(Date.UTC(2025, 0, 2, 3, 4, 5, 6)),
    );
    expect(
      DateTime.parseLiteral({ kind: Kind.STRING, value: '2025-01-02T03:04:05Z' }, undefined),
    ).toEqual(new Date(Date.UTC(2025, 0, 2, 3, 4, 5)));
  });
});
