import { ApolloServerErrorCode } from '@apollo/server/errors';
import {
  buildSchema,
  GraphQLError,
  parse,
  print,
  type ExecutionArgs,
  type ValidationRule,
} from 'graphql';
import { ScribeErrorCode } from '../common/errors/scribe-error-code.js';
import { type QueryLimitSettings } from '../config/scribe-config.js';
import { type Principal } from '../common/auth/authenticator.js';
import { FIELD_SCOPE } from '../common/auth/field-scope.js';
import { type Scope } from '../config/access-settings.js';
import { checkSubscription, type SubscribePayload } from './subscription-checks.js';

const schema = buildSchema(`
  type Message { id: ID!, content: String! }
  type Session { id: ID!, title: String, child: Session, messages(first: Int): [Message!]! }
  type Query { session(id: ID!): Session }
  type Mutation { touch(id: ID!): Boolean }
  type Subscription {
    messageAppended(sessionId: ID!): Message!
    sessionUpdated(id: ID!): Session!
    sessionsUpdated(ids: [ID!]!, first: Int): [Session!]!
  }
`);

const limits: QueryLimitSettings = {
  maxBytes: 1000,
  maxTokens: 100,
  maxAliases: 30,
  maxFullReads: 2,
};

const MESSAGE_APPENDED = 'subscription Watch($id: ID!) { messageAppended(sessionId: $id) { id } }';

/** A rule that refuses every `content` field, standing in for Armor's and Scribe's rules. */
const noContent: ValidationRule = (context) => ({
  Field(node) {
    if (node.name.value === 'content') context.reportError(new GraphQLError('content refused'));
  },
});

function check(payload: SubscribePayload): ExecutionArgs | GraphQLError[] {
  return checkSubscription(schema, payload, limits, [noContent]);
}

/** The refusals, as message and code, or 'accepted'. */
function refusals(payload: SubscribePayload): { message: string; code: unknown }[] | 'accepted' {
  const checked = check(payload);
  if (!Array.isArray(checked)) return 'accepted';
  return checked.map((error) => ({ message: error.message, code: error.extensions.code }));
}

/** `query` with a comment after it that brings it to exactly `bytes` bytes of UTF-8. */
function paddedTo(query: string, bytes: number): string {
  const room = bytes - Buffer.byteLength(query) - 2;
  // Two bytes per é: a length in characters would count them once.
  const padded = `${query}\n#${'é'.repeat(Math.floor(room / 2))}${'x'.repeat(room % 2)}`;
  expect(Buffer.byteLength(padded)).toBe(bytes);
  return padded;
}

/** A subscription `depth` fields deep. */
function nested(depth: number): string {
  const below = depth - 2;
  return `subscription { sessionUpdated(id: "s") { ${'child { '.repeat(below)}id${' }'.repeat(below)} } }`;
}

describe(checkSubscription.name, () => {
  it('hands graphql-ws what to execute for a subscription that passes', () => {
    const checked = check({
      query: MESSAGE_APPENDED,
      operationName: 'Watch',
      variables: { id: 's1' },
    }) as ExecutionArgs;

    expect(checked).toEqual({
      schema,
      document: expect.anything(),
      operationName: 'Watch',
      variableValues: { id: 's1' },
    });
    expect(checked.schema).toBe(schema);
    expect(print(checked.document)).toBe(print(parse(MESSAGE_APPENDED)));
  });

  it('passes a null operationName and null variables on as undefined', () => {
    const checked = check({
      query: 'subscription { messageAppended(sessionId: "s1") { id } }',
      operationName: null,
      variables: null,
    }) as ExecutionArgs;

    expect(checked.operationName).toBeUndefined();
    expect(checked.variableValues).toBeUndefined();
  });

  it('refuses a payload without a query text', () => {
    const refusal = [
      { message: 'The subscription has no query', code: ScribeErrorCode.BadRequest },
    ];

    expect(refusals({} as SubscribePayload)).toEqual(refusal);
    expect(refusals({ query: 42 } as unknown as SubscribePayload)).toEqual(refusal);
  });

  it("refuses a root field under a directive that reads a variable, which graphql-js's rule throws on", () => {
    expect(
      refusals({
        query:
          'subscription($id: ID!, $c: Boolean!) { messageAppended(sessionId: $id) @include(if: $c) { id } }',
        variables: { id: 's', c: true },
      }),
    ).toEqual([
      {
        message:
          'Argument "if" of required type "Boolean!" was provided the variable "$c" which was not provided a runtime value.',
        code: ApolloServerErrorCode.GRAPHQL_VALIDATION_FAILED,
      },
    ]);
  });

  describe('size', () => {
    it('takes a document of exactly MAX_QUERY_BYTES bytes, and refuses one byte more, unparsed', () => {
      const query = 'subscription { messageAppended(sessionId: "s1") { id } }';

      expect(refusals({ query: paddedTo(query, limits.maxBytes) })).toBe('accepted');
      expect(refusals({ query: paddedTo(query, limits.maxBytes + 1) })).toEqual([
        {
          message: 'Query document is larger than 1000 bytes (MAX_QUERY_BYTES)',
          code: ScribeErrorCode.QueryTooComplex,
        },
      ]);
      // Refused for its size before anything reads it.
      expect(refusals({ query: paddedTo('subscription {', limits.maxBytes + 1) })).toEqual([
        expect.objectContaining({ code: ScribeErrorCode.QueryTooComplex }),
      ]);
    });
  });

  describe('parsing', () => {
    it('refuses a document that does not parse with GRAPHQL_PARSE_FAILED and the parser’s message', () => {
      expect(refusals({ query: 'subscription {' })).toEqual([
        {
          message: 'Syntax Error: Expected Name, found <EOF>.',
          code: ApolloServerErrorCode.GRAPHQL_PARSE_FAILED,
        },
      ]);
    });

    it('stops parsing past MAX_QUERY_TOKENS', () => {
      const fields = 'id '.repeat(limits.maxTokens);
      const query = `subscription { sessionUpdated(id: "s") { ${fields} } }`;

      expect(refusals({ query })).toEqual([
        {
          message: `Syntax Error: Document contains more that ${limits.maxTokens} tokens. Parsing aborted.`,
          code: ApolloServerErrorCode.GRAPHQL_PARSE_FAILED,
        },
      ]);
    });
  });

  describe('validation', () => {
    it("answers every error of GraphQL's own rules", () => {
      expect(
        refusals({ query: 'subscription { messageAppended(sessionId: "s") { nope nada } }' }),
      ).toEqual([
        { message: 'Cannot query field "nope" on type "Message".', code: undefined },
        { message: 'Cannot query field "nada" on type "Message".', code: undefined },
      ]);
    });

    it('runs the validation rules given besides', () => {
      expect(
        refusals({ query: 'subscription { messageAppended(sessionId: "s") { id content } }' }),
      ).toEqual([{ message: 'content refused', code: undefined }]);
    });
  });

  describe('the operation', () => {
    const TWO = `
      subscription First { messageAppended(sessionId: "s") { id } }
      subscription Second { sessionUpdated(id: "s") { id } }
    `;

    it('runs the operation named', () => {
      expect((check({ query: TWO, operationName: 'Second' }) as ExecutionArgs).operationName).toBe(
        'Second',
      );
    });

    it('refuses a document of several operations that names none, or names one it lacks', () => {
      const refusal = [
        {
          message: 'Name the operation to run',
          code: ApolloServerErrorCode.OPERATION_RESOLUTION_FAILURE,
        },
      ];

      expect(refusals({ query: TWO })).toEqual(refusal);
      expect(refusals({ query: TWO, operationName: 'Third' })).toEqual(refusal);
    });

    it('refuses a query and a mutation: they have HTTP', () => {
      expect(refusals({ query: '{ session(id: "s") { id } }' })).toEqual([
        {
          message: 'Only subscriptions run over the WebSocket; send a query with HTTP POST',
          code: ScribeErrorCode.BadRequest,
        },
      ]);
      expect(refusals({ query: 'mutation { touch(id: "s") }' })).toEqual([
        {
          message: 'Only subscriptions run over the WebSocket; send a mutation with HTTP POST',
          code: ScribeErrorCode.BadRequest,
        },
      ]);
    });

    it('takes the subscription of a document that holds a query too, when it is named', () => {
      const query =
        'query Read { session(id: "s") { id } } subscription Watch { sessionUpdated(id: "s") { id } }';

      expect(refusals({ query, operationName: 'Watch' })).toBe('accepted');
      expect(refusals({ query, operationName: 'Read' })).toEqual([
        expect.objectContaining({ code: ScribeErrorCode.BadRequest }),
      ]);
    });
  });

  describe('bounds on what it would read', () => {
    const SESSIONS = `subscription Sessions($ids: [ID!]!, $first: Int) {
      sessionsUpdated(ids: $ids, first: $first) { messages { id } }
    }`;
    const ids = (count: number) => Array.from({ length: count }, (_, index) => `s${index}`);

    it('refuses a variable list of more than 1,000 items with BAD_USER_INPUT', () => {
      expect(refusals({ query: SESSIONS, variables: { ids: ids(1000), first: 1 } })).toBe(
        'accepted',
      );
      expect(refusals({ query: SESSIONS, variables: { ids: ids(1001), first: 1 } })).toEqual([
        {
          message: 'ids holds 1001 items; a list may hold at most 1000',
          code: ScribeErrorCode.BadUserInput,
        },
      ]);
    });

    it('takes a subscription 12 fields deep, and refuses one 13 deep', () => {
      expect(refusals({ query: nested(12) })).toBe('accepted');
      expect(refusals({ query: nested(13) })).toEqual([
        {
          message: 'Query depth 13 exceeds the limit of 12',
          code: ScribeErrorCode.QueryTooComplex,
        },
      ]);
    });

    it("costs the operation named with the request's variables against MAX_FULL_READS_PER_REQUEST", () => {
      const query = `${SESSIONS} subscription Light { sessionUpdated(id: "s") { id } }`;
      const payload = (first: number, operationName = 'Sessions') => ({
        query,
        operationName,
        variables: { ids: ['s1'], first },
      });

      expect(refusals(payload(2))).toBe('accepted');
      expect(refusals(payload(3))).toEqual([
        {
          message:
            'Query could read the transcripts of 3 sessions; the limit is 2 per request (MAX_FULL_READS_PER_REQUEST)',
          code: ScribeErrorCode.QueryTooComplex,
        },
      ]);
      expect(refusals(payload(3, 'Light'))).toBe('accepted');
    });
  });

  it("refuses a field of the event that the connection's caller may not see", () => {
    const scoped = buildSchema(`
      type Session { id: ID, title: String }
      type Query { session: Session }
      type Subscription { sessionUpdated(id: ID!): Session! }
    `);
    const session = scoped.getType('Session') as unknown as {
      getFields(): Record<string, { extensions: object }>;
    };
    session.getFields().id.extensions = { [FIELD_SCOPE]: 'public' };
    session.getFields().title.extensions = { [FIELD_SCOPE]: 'read' };
    const caller = (scopes: Scope[]): Principal => ({
      anonymous: false,
      who: 'x',
      key: 'x',
      scopes: new Set(scopes),
      sessionPrefix: undefined,
    });
    const payload = { query: 'subscription { sessionUpdated(id: "s") { id title } }' };
    const refused = checkSubscription(scoped, payload, limits, [], caller(['append']));
    expect(Array.isArray(refused) && refused.map((error) => error.message)).toEqual([
      'Session.title needs the read scope, which this caller lacks',
    ]);
    expect(Array.isArray(checkSubscription(scoped, payload, limits, [], caller(['read'])))).toBe(
      false,
    );
  });
});
