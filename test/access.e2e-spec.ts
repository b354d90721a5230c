import { JwtService } from '@nestjs/jwt';
import { databaseKinds } from './support/databases.js';
import { faultSuite } from './support/fault-helpers.js';
import { createTestApp, type TestApp } from './support/test-app.js';

// Who may do what: every operation against every kind of caller, on each database. Static
// tokens (API_TOKENS, ADMIN_TOKEN) and JWTs signed with JWT_SECRET for the configured issuer
// and audience; a JWT may be limited to sessions whose id starts with a prefix.
const SECRET = 'access-suite-secret-of-32-bytes!';
const jwt = new JwtService();
const token = (claims: Record<string, unknown>, options: Record<string, unknown> = {}) =>
  `Bearer ${jwt.sign(claims, { secret: SECRET, issuer: 'idp', audience: 'scribe', expiresIn: 300, ...options })}`;

type Outcome = 'ok' | 'UNAUTHENTICATED' | 'FORBIDDEN';

const OPERATIONS: Record<string, { query: string; variables?: Record<string, unknown> }> = {
  appendMessage: {
    query: `mutation($input: AppendMessageInput!) { appendMessage(input: $input) { status } }`,
    variables: { input: { sessionId: 'u1-chat', role: 'USER', content: 'hi' } },
  },
  appendMessages: {
    query: `mutation($input: AppendMessagesInput!) { appendMessages(input: $input) { status } }`,
    variables: { input: { sessionId: 'u1-chat', messages: [{ role: 'USER', content: 'hi' }] } },
  },
  session: { query: `{ session(id: "u1-chat") { id messages(first: 5) { totalCount } } }` },
  otherSession: { query: `{ session(id: "u2-chat") { id } }` },
  sessions: { query: `{ sessions(first: 5) { totalCount } }` },
  pendingStatus: { query: `{ pendingStatus { totalPending } }` },
  spoolStatus: { query: `{ spoolStatus { messages } }` },
  gateStatus: { query: `{ gateStatus { concurrency } }` },
};

const U = 'UNAUTHENTICATED';
const F = 'FORBIDDEN';
// Per caller, the outcome of each operation, in the order of OPERATIONS.
const CALLERS: [string, () => string | undefined, Outcome[]][] = [
  ['no token', () => undefined, [U, U, U, U, U, U, U, U]],
  ['a wrong token', () => 'Bearer nope', [U, U, U, U, U, U, U, U]],
  ['a read token', () => 'Bearer ro', [F, F, 'ok', 'ok', 'ok', F, F, F]],
  ['a read+append token', () => 'Bearer rw', ['ok', 'ok', 'ok', 'ok', 'ok', F, F, F]],
  ['an admin token', () => 'Bearer ops', Array<Outcome>(8).fill('ok')],
  ['ADMIN_TOKEN', () => 'Bearer legacy', Array<Outcome>(8).fill('ok')],
  ['a JWT with read', () => token({ scope: 'read' }), [F, F, 'ok', 'ok', 'ok', F, F, F]],
  [
    'a JWT with read and append, limited to u1-',
    () => token({ sub: 'u1', scope: 'read append', session_prefix: 'u1-' }),
    // `sessions` lists its own (own-sessions.e2e-spec.ts); the admin fields stay refused.
    ['ok', 'ok', 'ok', F, 'ok', F, F, F],
  ],
  ['an expired JWT', () => token({ scope: 'admin' }, { expiresIn: -5 }), [U, U, U, U, U, U, U, U]],
  [
    'a JWT for another audience',
    () => token({ scope: 'admin' }, { audience: 'elsewhere' }),
    [U, U, U, U, U, U, U, U],
  ],
];

describe.each(databaseKinds())('access control on %s', (database) => {
  let sut: TestApp;

  beforeAll(async () => {
    sut = await createTestApp(database, {
      API_TOKENS: 'ro=read,rw=read+append,ops=admin',
      ADMIN_TOKEN: 'legacy',
      JWT_SECRET: SECRET,
      JWT_ISSUER: 'idp',
      JWT_AUDIENCE: 'scribe',
    });
  });

  afterAll(() => sut.close());

  it.each(CALLERS)('answers %s as it may', async (_caller, authorization, expected) => {
    const before = await sut.gql(`{ sessions(first: 100) { totalCount } }`, undefined, {
      authorization: 'Bearer ops',
    });
    const outcomes: Record<string, Outcome> = {};
    let allowedWrites = 0;
    for (const [name, { query, variables }] of Object.entries(OPERATIONS)) {
      const header = authorization();
      const response = await sut.gql(query, variables, header ? { authorization: header } : {});
      const code = response.errors?.[0]?.extensions?.code;
      outcomes[name] = code === undefined ? 'ok' : (code as Outcome);
      if (code === undefined && name.startsWith('append')) allowedWrites += 1;
      if (code !== undefined) {
        // Nothing of a refused field is answered (a nullable one is null, or data is).
        expect(Object.values(response.data ?? { [name]: null })).toEqual([null]);
        expect(JSON.stringify(response.body)).not.toMatch(/SECRET|access-suite-secret|\bat .*\.js/);
      }
    }
    expect(outcomes).toEqual(
      Object.fromEntries(Object.keys(OPERATIONS).map((name, i) => [name, expected[i]])),
    );
    // A refused append wrote nothing: the session count moved only for allowed ones.
    const after = await sut.gql(`{ sessions(first: 100) { totalCount } }`, undefined, {
      authorization: 'Bearer ops',
    });
    if (allowedWrites === 0) {
      expect(after.data.sessions.totalCount).toBe(before.data.sessions.totalCount);
    }
  });

  it('refuses bad credentials with HTTP 401 before GraphQL parses or checks anything', async () => {
    for (const authorization of [
      undefined,
      'Bearer nope',
      token({ scope: 'read' }, { expiresIn: -5 }),
    ]) {
      const response = await sut.gql(
        '{ this is not GraphQL',
        { huge: Array.from({ length: 50_000 }, () => ({ role: 'USER', content: '' })) },
        authorization ? { authorization } : {},
      );
      expect(response.status).toBe(401);
      expect(response.errors?.map((error) => error.extensions?.code)).toEqual(['UNAUTHENTICATED']);
    }
    // With valid credentials the same document is GraphQL's to refuse.
    const parsed = await sut.gql('{ this is not GraphQL', undefined, {
      authorization: 'Bearer ro',
    });
    expect(parsed.errors?.[0]?.extensions?.code).toBe('GRAPHQL_PARSE_FAILED');
  });

  it('authenticates once per request, however many fields it selects', async () => {
    const response = await sut.gql(
      `{ a: sessions(first: 1) { totalCount } b: sessions(first: 2) { totalCount } gateStatus { concurrency } }`,
      undefined,
      { authorization: 'Bearer ro' },
    );
    expect(response.data).toBeNull();
    expect(response.errors?.map((error) => error.extensions?.code).sort()).toEqual(['FORBIDDEN']);
  });
});

describe('anonymous access', () => {
  let open: TestApp;

  beforeAll(async () => {
    open = await createTestApp('sqlite', { ADMIN_TOKEN: 'ops' });
  });

  afterAll(() => open.close());

  it('lets anonymous callers read and append on loopback with no tokens, never the admin queries', async () => {
    const append = await open.gql(
      OPERATIONS.appendMessage.query,
      OPERATIONS.appendMessage.variables,
    );
    expect(append.data.appendMessage.status).toBe('PERSISTED');
    expect((await open.gql(OPERATIONS.session.query)).errors).toBeUndefined();
    const admin = await open.gql(OPERATIONS.gateStatus.query);
    expect(admin.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    expect(
      (await open.gql(OPERATIONS.gateStatus.query, undefined, { authorization: 'Bearer ops' }))
        .errors,
    ).toBeUndefined();
  });
});

describe('anonymous access through a proxy on this machine', () => {
  it.each<Record<string, string>>([{}, { TRUST_PROXY: 'loopback' }])(
    'is refused for a request that names a forwarded client (%p), though it arrives on loopback',
    async (settings) => {
      const open = await createTestApp('sqlite', settings);
      try {
        for (const header of ['x-forwarded-for', 'forwarded', 'x-real-ip']) {
          const proxied = await open.gql(OPERATIONS.session.query, undefined, {
            [header]: header === 'forwarded' ? 'for=203.0.113.9' : '203.0.113.9',
          });
          expect({ header, code: proxied.errors?.[0]?.extensions?.code }).toEqual({
            header,
            code: 'UNAUTHENTICATED',
          });
        }
        expect((await open.gql(OPERATIONS.session.query)).errors).toBeUndefined();
      } finally {
        await open.close();
      }
    },
  );
});

describe('starting on a non-loopback address', () => {
  const { faultTest, server, dataDirectory } = faultSuite(30_000);

  faultTest(
    'refuses to start with no token configured, in one line that names the way out',
    async () => {
      const started = server({ DATA_DIR: await dataDirectory(), HOST: '0.0.0.0' });
      await expect(started).rejects.toThrow(
        /invalid configuration: HOST=0\.0\.0\.0 is not a loopback address and neither API_TOKENS nor a JWT key is set: .*ALLOW_ANONYMOUS=true/,
      );
    },
  );

  faultTest('starts with ALLOW_ANONYMOUS=true, and says so at WARN', async () => {
    const sut = await server({
      DATA_DIR: await dataDirectory(),
      HOST: '0.0.0.0',
      ALLOW_ANONYMOUS: 'true',
    });
    expect(sut.output()).toMatch(/WARN .*anonymous callers may read and append every session/);
  });

  faultTest('starts with tokens configured, and refuses anonymous callers', async () => {
    const sut = await server({
      DATA_DIR: await dataDirectory(),
      HOST: '0.0.0.0',
      API_TOKENS: 'k=read+append',
    });
    const anonymous = await sut.gql(OPERATIONS.session.query);
    expect(anonymous.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    const withToken = await sut.gql(OPERATIONS.session.query, undefined, {
      authorization: 'Bearer k',
    });
    expect(withToken.errors).toBeUndefined();
  });
});
