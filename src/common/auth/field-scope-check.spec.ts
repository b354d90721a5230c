import { Kind, buildSchema, parse, type OperationDefinitionNode } from 'graphql';
import { type Scope } from '../../config/access-settings.js';
import { hiddenField } from './field-scope-check.js';
import { FIELD_SCOPE, declaredVisibility, undeclaredFields } from './field-scope.js';

// The SDL stands in for what FieldScope declares: graphql-js keeps extensions on the objects.
function schemaWith(visibilities: Record<string, Record<string, string | undefined>>) {
  const schema = buildSchema(`
    type Query { session: Session, status: Status }
    type Mutation { update: Session }
    type Session { id: ID, title: String, messages: [Message] }
    type Message { id: ID, content: String }
    type Status { queued: Int }
  `);
  for (const [typeName, fields] of Object.entries(visibilities)) {
    const type = schema.getType(typeName) as unknown as {
      extensions: Record<string, unknown>;
      getFields(): Record<string, { extensions: Record<string, unknown> }>;
    };
    for (const [fieldName, visibility] of Object.entries(fields)) {
      if (fieldName === '*') type.extensions = { [FIELD_SCOPE]: visibility };
      else type.getFields()[fieldName].extensions = { [FIELD_SCOPE]: visibility };
    }
  }
  return schema;
}

const declared = () =>
  schemaWith({
    Query: { session: 'read', status: 'admin' },
    Mutation: { update: 'append' },
    Session: { '*': 'read', id: 'public' },
    Message: { '*': 'read', id: 'public' },
    Status: { '*': 'admin' },
  });

function check(query: string, scopes: Scope[], schema = declared()) {
  const document = parse(query);
  const operation = document.definitions.find(
    (definition): definition is OperationDefinitionNode =>
      definition.kind === Kind.OPERATION_DEFINITION,
  ) as OperationDefinitionNode;
  return hiddenField(schema, document, operation, new Set(scopes));
}

describe(hiddenField.name, () => {
  it('lets through what the caller may see, below root fields it may run', () => {
    expect(check('mutation { update { id __typename } }', ['append'])).toBeUndefined();
    expect(check('{ session { id title messages { content } } }', ['read'])).toBeUndefined();
    expect(check('{ status { queued } }', ['admin'])).toBeUndefined();
  });

  it('leaves a root field the caller may not run to its guard, whatever it selects', () => {
    expect(check('mutation { update { title } }', ['read'])).toBeUndefined();
    expect(check('{ status { queued } }', ['append'])).toBeUndefined();
    expect(check('{ session { id } status { queued } }', ['read'])).toBeUndefined();
  });

  it.each([
    ['a field of the root field', 'mutation { update { id title } }', 'Session.title'],
    ['a nested field', 'mutation { update { messages { id content } } }', 'Session.messages'],
    [
      'a field in a named fragment',
      'mutation { update { ...F } } fragment F on Session { title }',
      'Session.title',
    ],
    [
      'a field in an inline fragment',
      'mutation { update { ... on Session { title } } }',
      'Session.title',
    ],
    ['a field under a skip', 'mutation { update { title @skip(if: true) } }', 'Session.title'],
  ])('finds %s the caller may not see', (_name, query, coordinate) => {
    expect(check(query, ['append'])).toEqual({ coordinate, needs: 'read' });
  });

  it('takes a field’s own declaration over its type’s', () => {
    expect(check('mutation { update { messages { id } } }', ['append'])).toEqual({
      coordinate: 'Session.messages',
      needs: 'read',
    });
    const open = schemaWith({
      Session: { '*': 'read', id: 'public', messages: 'public' },
      Message: { '*': 'public' },
    });
    expect(check('{ session { messages { content } } }', [], open)).toBeUndefined();
    const statusForReaders = schemaWith({
      Query: { status: 'read' },
      Status: { '*': 'admin' },
    });
    expect(check('{ status { queued } }', ['read'], statusForReaders)).toEqual({
      coordinate: 'Status.queued',
      needs: 'admin',
    });
  });

  it('refuses a field that declares nothing to everyone', () => {
    const bare = schemaWith({ Query: { session: 'public' }, Session: { id: 'public' } });
    expect(check('{ session { id } }', [])).toBeUndefined();
    expect(check('{ session { title } }', ['read', 'append', 'admin'], bare)).toEqual({
      coordinate: 'Session.title',
      needs: undefined,
    });
  });

  it('walks a fragment spread many times once', () => {
    const spreads = Array.from({ length: 50 }, (_, i) => `a${i}: update { ...F }`).join(' ');
    expect(
      check(`mutation { ${spreads} } fragment F on Session { id }`, ['append']),
    ).toBeUndefined();
    expect(check(`mutation { ${spreads} } fragment F on Session { title }`, ['append'])).toEqual({
      coordinate: 'Session.title',
      needs: 'read',
    });
  });
});

describe(undeclaredFields.name, () => {
  it('lists every field of a non-root object type that declares nothing', () => {
    const partly = schemaWith({
      Query: { session: 'read' },
      Session: { '*': 'read' },
      Message: { id: 'public' },
    });
    expect(undeclaredFields(partly)).toEqual([
      'Query.status',
      'Mutation.update',
      'Message.content',
      'Status.queued',
    ]);
    expect(undeclaredFields(declared())).toEqual([]);
  });

  it('reads what FieldScope declares on a class and on a field', () => {
    const schema = declared();
    const session = schema.getType('Session') as never as {
      getFields(): Record<string, never>;
    };
    expect(declaredVisibility(schema.getType('Session')!, session.getFields().id)).toBe('public');
    expect(declaredVisibility(schema.getType('Session')!, session.getFields().title)).toBe('read');
  });
});
