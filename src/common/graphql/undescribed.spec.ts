import { buildSchema } from 'graphql';
import { undescribedElements } from './undescribed.js';

const DESCRIBED = `
  "A chat."
  type Session {
    "Its id."
    id: ID!
    "Its messages."
    messages("How many." first: Int): [String!]!
  }
  "Who wrote."
  enum Role {
    "A person."
    USER
  }
  "A change."
  input Change {
    "The new title."
    title: String
  }
  "Has an id."
  interface Node {
    "The id."
    id: ID!
  }
  "A moment."
  scalar DateTime
  type Mutation {
    "Touch."
    touch: Int
  }
  type Subscription {
    "Ticks."
    tick: Int
  }
  type Query {
    "One session."
    session("Which." id: ID!, "Changed how." change: Change): Session
    "When."
    now: DateTime
    "Something with an id."
    node("Which." id: ID!): Node
    "A role."
    role: Role
  }
`;

describe('undescribedElements', () => {
  it('passes a schema whose every element is described, roots and built-in types aside', () => {
    expect(undescribedElements(buildSchema(DESCRIBED))).toEqual([]);
  });

  it.each([
    ['an object type', '"A chat."\n  type Session', 'type Session', 'Session'],
    [
      'a field',
      '"Its id."\n    id: ID!\n    "Its messages."',
      'id: ID!\n    "Its messages."',
      'Session.id',
    ],
    ['a field argument', '"How many." first', 'first', 'Session.messages(first:)'],
    [
      'a root field argument',
      '"Which." id: ID!, "Changed how."',
      'id: ID!, "Changed how."',
      'Query.session(id:)',
    ],
    ['a root field', '"When."\n    now', 'now', 'Query.now'],
    ['an enum type', '"Who wrote."\n  enum', 'enum', 'Role'],
    ['an enum value', '"A person."\n    USER', 'USER', 'Role.USER'],
    ['an input type', '"A change."\n  input', 'input', 'Change'],
    ['an input field', '"The new title."\n    title', 'title', 'Change.title'],
    ['an interface', '"Has an id."\n  interface', 'interface', 'Node'],
    ['an interface field', '"The id."\n    id', 'id', 'Node.id'],
    ['a custom scalar', '"A moment."\n  scalar', 'scalar', 'DateTime'],
  ])('names %s without a description', (_what, described, bare, coordinate) => {
    expect(DESCRIBED).toContain(described);
    expect(undescribedElements(buildSchema(DESCRIBED.replace(described, bare)))).toEqual([
      coordinate,
    ]);
  });

  it('counts a description of blanks as none, and lists what is missing sorted', () => {
    const schema = buildSchema(`
      "  "
      type Zeta { "x" a: Int }
      type Alpha { b: Int }
      type Query { "z" zeta: Zeta, "a" alpha: Alpha }
    `);
    expect(undescribedElements(schema)).toEqual(['Alpha', 'Alpha.b', 'Zeta']);
  });
});
