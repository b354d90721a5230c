import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import { BadRequestException, Module } from '@nestjs/common';
import { Field, GraphQLModule, ObjectType, Query, Resolver } from '@nestjs/graphql';
import { GraphQLError } from 'graphql';
import { type Client } from 'graphql-ws';
import { type Server } from 'node:http';
import WebSocket, { WebSocketServer } from 'ws';
import { ScribeGraphQL } from '../src/graphql/scribe-graphql.js';
import { createScribeTestingModule, type ScribeTesting } from '../src/kit/index.js';
import { LiveChannels } from '../src/live/live-channels.js';
import { eventually, liveClient, subscribe } from './support/live-client.js';
import { hostGraphQLModule } from './support/host-graphql.js';

/** A host's type that nests as deep as a query asks. */
@ObjectType()
class HostNode {
  @Field()
  name!: string;

  @Field(() => HostNode)
  child!: HostNode;
}

const hostNode = (): HostNode => ({
  name: 'node',
  get child() {
    return hostNode();
  },
});

@Resolver()
class HostResolver {
  @Query(() => String)
  hello(): string {
    return 'world';
  }

  @Query(() => HostNode)
  hostNode(): HostNode {
    return hostNode();
  }

  @Query(() => String)
  hostRefusal(): string {
    throw new BadRequestException('the host says no');
  }

  @Query(() => String)
  hostCoded(): string {
    throw new GraphQLError('the host has its own code', {
      extensions: { code: 'HOST_TEAPOT' },
    });
  }
}

@Module({ providers: [HostResolver] })
class HostModule {}

const APPEND = `mutation($input: AppendMessageInput!) {
  appendMessage(input: $input) { status message { id } }
}`;
const LIVE = `subscription($s: ID!) { messageAppended(sessionId: $s) { node { content } } }`;
const SESSIONS = `{ sessions(first: 1) { totalCount } }`;
const as = (token: string) => ({ authorization: `Bearer ${token}` });
const codes = (answer: { errors?: { extensions?: { code?: string } }[] }) =>
  (answer.errors ?? []).map((error) => error.extensions?.code);
/** `count` aliases of `field`, a0 to a<count - 1>. */
const aliases = (count: number, field: string) =>
  Array.from({ length: count }, (_, i) => `a${i}: ${field}`).join(' ');
/** The host's hostNode, selected `depth` fields deep. */
const deepHost = (depth: number) =>
  `hostNode ${'{ child '.repeat(depth - 2)}{ name }${' }'.repeat(depth - 2)}`;
// Scribe's defaults: MAX_QUERY_ALIASES 30, MAX_QUERY_TOKENS 1000, depth 12.
const SCRIBE_ALIASES = aliases(200, 'sessions(first: 1) { totalCount }');

// The host's own GraphQL beside Scribe's: at /host ('own', Scribe's endpoint stays at
// /graphql), or one endpoint at /graphql that serves both ('host', through forHost).
const hostGraphQL = {
  own: GraphQLModule.forRoot<ApolloDriverConfig>({
    driver: ApolloDriver,
    path: '/host',
    autoSchemaFile: true,
    include: [HostModule],
  }),
  host: hostGraphQLModule(),
};

describe.each(['own', 'host'] as const)("Scribe in a host app, GraphQL in '%s' mode", (mode) => {
  let sut: ScribeTesting;
  const hostPath = mode === 'own' ? '/host' : '/graphql';
  const clients: Client[] = [];
  const hostSockets = new WebSocketServer({ noServer: true });

  beforeAll(async () => {
    sut = await createScribeTestingModule({
      imports: [HostModule, hostGraphQL[mode]],
      graphql: { mode },
      options: { auth: { apiTokens: 'rw=read+append,ro=read' } },
    });
    // The host's own WebSocket endpoint, on a path of its own on the same HTTP server.
    const server = sut.app.getHttpServer() as Server;
    server.on('upgrade', (request, socket, head) => {
      if (new URL(request.url ?? '/', 'http://host').pathname !== '/host-ws') return;
      hostSockets.handleUpgrade(request, socket, head, (client) => {
        client.send('hello from the host');
      });
    });
  });

  afterEach(async () => {
    for (const client of clients.splice(0)) await client.dispose();
  });

  afterAll(async () => {
    hostSockets.close();
    await sut?.close();
  });

  const host = (
    query: string,
    headers: Record<string, string> = {},
    variables?: Record<string, unknown>,
  ) => sut.gql(query, variables, headers, hostPath);

  it("answers the host's field with no token while Scribe's tokens are configured", async () => {
    const answer = await host('{ hello }');
    expect(answer.status).toBe(200);
    expect(answer.errors).toBeUndefined();
    expect(answer.data).toEqual({ hello: 'world' });
  });

  it("hands the host's errors to the client as the host raised them", async () => {
    const refusal = await host('{ hostRefusal }');
    expect(refusal.errors).toHaveLength(1);
    expect(refusal.errors?.[0].message).toBe('the host says no');
    expect(codes(refusal)).toEqual(['BAD_REQUEST']);
    const coded = await host('{ hostCoded }');
    expect(coded.errors?.[0].message).toBe('the host has its own code');
    expect(codes(coded)).toEqual(['HOST_TEAPOT']);
  });

  it("keeps Scribe's auth on Scribe's fields", async () => {
    const anonymous = await sut.gql(SESSIONS);
    expect(anonymous.status).toBe(401);
    expect(codes(anonymous)).toEqual(['UNAUTHENTICATED']);
    const read = await sut.gql(SESSIONS, undefined, as('ro'));
    expect(read.status).toBe(200);
    expect(read.errors).toBeUndefined();
    expect(read.data.sessions.totalCount).toEqual(expect.any(Number));
    const input = { sessionId: `scope-${mode}`, role: 'USER', content: 'hi' };
    const append = await sut.gql(APPEND, { input }, as('ro'));
    expect(codes(append)).toEqual(['FORBIDDEN']);
    expect(append.data?.appendMessage ?? null).toBeNull();
  });

  it("bounds Scribe's fields by Scribe's limits (MAX_QUERY_ALIASES)", async () => {
    const aliases = Array.from(
      { length: 31 },
      (_, i) => `a${i}: sessions(first: 1) { totalCount }`,
    );
    const answer = await sut.gql(`{ ${aliases.join(' ')} }`, undefined, as('ro'));
    expect(answer.data).toBeUndefined();
    expect(answer.errors?.[0].message).toMatch(/alias/i);
  });

  it('answers /health, /health/live, /health/ready and /metrics', async () => {
    for (const path of ['/health', '/health/live', '/health/ready']) {
      expect({ path, status: (await fetch(`${sut.url}${path}`)).status }).toEqual({
        path,
        status: 200,
      });
    }
    const metrics = await fetch(`${sut.url}/metrics`);
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toMatch(/^scribe_/m);
  });

  it('serves the admin console and its bundle, calling the GraphQL path Scribe is on', async () => {
    const page = await fetch(`${sut.url}/admin`);
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('data-graphql-path="/graphql"');
    expect(html).toContain('<label for="token">Admin token</label>');
    for (const asset of ['admin-console.js', 'admin-console.css']) {
      const response = await fetch(`${sut.url}/admin/assets/${asset}`);
      expect({ asset, status: response.status }).toEqual({ asset, status: 200 });
    }
    expect((await fetch(`${sut.url}/admin/assets/..%2Fpackage.json`)).status).toBe(404);
  });

  it("delivers a subscription on Scribe's path", async () => {
    const client = liveClient(`${sut.url.replace(/^http/, 'ws')}/graphql`, {
      authorization: 'Bearer rw',
    });
    clients.push(client);
    const sessionId = `live-${mode}`;
    const live = subscribe(client, LIVE, { s: sessionId }, 'messageAppended');
    await eventually(() => sut.app.get(LiveChannels).openCount === 1 || live.error !== undefined);
    const input = { sessionId, role: 'USER', content: 'live' };
    const answer = await sut.gql(APPEND, { input }, as('rw'));
    expect(answer.errors).toBeUndefined();
    await sut.settled();
    const events = await live.received(1);
    expect(events[0].node.content).toBe('live');
    live.stop();
  });

  it("leaves the host's WebSocket upgrade on another path to the host", async () => {
    const socket = new WebSocket(`${sut.url.replace(/^http/, 'ws')}/host-ws`);
    const first = await new Promise<string>((resolve, reject) => {
      socket.once('message', (data: Buffer) => resolve(data.toString()));
      socket.once('error', reject);
      socket.once('unexpected-response', (_req, res) =>
        reject(new Error(`upgrade refused: ${res.statusCode}`)),
      );
    });
    expect(first).toBe('hello from the host');
    socket.close();
  });

  if (mode === 'own') {
    it('keeps the two schemas apart: no Scribe field at /host, no hello at /graphql', async () => {
      const scribeAtHost = await host(SESSIONS, as('ro'));
      expect(scribeAtHost.status).toBe(400);
      expect(scribeAtHost.errors?.[0].message).toMatch(/Cannot query field "sessions"/);
      const helloAtScribe = await sut.gql('{ hello }', undefined, as('ro'));
      expect(helloAtScribe.errors?.[0].message).toMatch(/Cannot query field "hello"/);
    });
  } else {
    it("judges a mixed operation on Scribe's part only", async () => {
      const mixed = `{ hello sessions(first: 1) { totalCount } }`;
      const read = await sut.gql(mixed, undefined, as('ro'));
      expect(read.status).toBe(200);
      expect(read.errors).toBeUndefined();
      expect(read.data).toEqual({ hello: 'world', sessions: { totalCount: expect.any(Number) } });
      // Without a token Scribe's part is refused as any Scribe operation is: the whole
      // operation is answered 401 UNAUTHENTICATED, the host's field included.
      const anonymous = await sut.gql(mixed);
      expect(anonymous.status).toBe(401);
      expect(codes(anonymous)).toContain('UNAUTHENTICATED');
      expect(anonymous.data?.hello).toBeUndefined();
    });

    it("leaves an operation of the host's fields and meta fields to the host, any token", async () => {
      // A token that is not Scribe's (the host's own, say) is none of Scribe's business here.
      for (const headers of [{}, as('the-hosts-own-token')]) {
        const typename = await host('{ hello __typename }', headers);
        expect(typename.status).toBe(200);
        expect(typename.errors).toBeUndefined();
        expect(typename.data).toEqual({ hello: 'world', __typename: 'Query' });
        const meta = await host(
          '{ hello __schema { queryType { name } } __type(name: "Query") { name } }',
          headers,
        );
        expect(meta.errors).toBeUndefined();
        expect(meta.data).toEqual({
          hello: 'world',
          __schema: { queryType: { name: 'Query' } },
          __type: { name: 'Query' },
        });
        const alone = await host('{ t: __typename }', headers);
        expect(alone.data).toEqual({ t: 'Query' });
      }
    });

    it("leaves the host's operations to the host's limits, not Scribe's, but its tokens", async () => {
      const many = await host(`{ ${aliases(200, 'hello')} }`);
      expect(many.status).toBe(200);
      expect(many.errors).toBeUndefined();
      expect(Object.keys(many.data)).toHaveLength(200);
      // 400 aliases: 1,202 tokens, past MAX_QUERY_TOKENS, which bounds every document while
      // it is parsed (the host gave no parseOptions.maxTokens), before it is validated whole.
      for (const query of [
        `{ ${aliases(400, 'hello')} }`,
        `{ hello ${aliases(400, '__typename')} }`,
      ]) {
        const tokens = await host(query);
        expect(tokens.status).toBe(400);
        expect(codes(tokens)).toEqual(['QUERY_TOO_COMPLEX']);
        expect(tokens.errors?.[0].message).toBe(
          'Query document has more than 1000 tokens (MAX_QUERY_TOKENS)',
        );
      }
      // 15 fields deep, past Scribe's depth: the host's to bound.
      const deep = await host(`{ ${deepHost(15)} }`);
      expect(deep.status).toBe(200);
      expect(deep.errors).toBeUndefined();
    });

    it("bounds an operation with Scribe's fields whole, the host's in it included", async () => {
      const refused = async (query: string) => {
        const answer = await host(query, as('ro'));
        expect(answer.status).toBe(400);
        expect(codes(answer)).toEqual(['QUERY_TOO_COMPLEX']);
        expect(answer.data).toBeUndefined();
        return answer.errors?.[0].message;
      };
      // 200 aliases of a Scribe field: 1,600 tokens, refused for those first.
      expect(await refused(`{ hello ${SCRIBE_ALIASES} }`)).toMatch(/MAX_QUERY_TOKENS/);
      const one = 'sessions(first: 1) { totalCount }';
      expect(await refused(`{ ${one} ${aliases(31, 'hello')} }`)).toMatch(/Aliases limit of 30/);
      expect(await refused(`{ ${one} ${aliases(400, 'hello')} }`)).toBe(
        'Query document has more than 1000 tokens (MAX_QUERY_TOKENS)',
      );
      expect(await refused(`{ ${one} ${deepHost(13)} }`)).toMatch(
        /depth 13 exceeds the limit of 12/,
      );
      const within = await host(`{ ${one} ${deepHost(12)} ${aliases(29, 'hello')} }`, as('ro'));
      expect(within.errors).toBeUndefined();
    });

    it("ignores a bad Scribe token on the host's fields, refuses it on Scribe's, unrun", async () => {
      const bad = as('not-a-scribe-token');
      const hello = await host('{ hello }', bad);
      expect(hello.status).toBe(200);
      expect(hello.data).toEqual({ hello: 'world' });
      const mixed = await host('{ hello sessions(first: 1) { totalCount } }', bad);
      expect(mixed.status).toBe(401);
      expect(codes(mixed)).toEqual(['UNAUTHENTICATED']);
      expect(mixed.data).toBeUndefined();
      const input = { sessionId: 'bad-token-host', role: 'USER', content: 'never' };
      const append = await host(APPEND, bad, { input });
      expect(append.status).toBe(401);
      expect(codes(append)).toEqual(['UNAUTHENTICATED']);
      // No resolver of Scribe's ran: nothing was appended.
      await sut.settled();
      const read = await sut.gql(
        '{ session(id: "bad-token-host") { messages(first: 5) { totalCount } } }',
        undefined,
        as('ro'),
      );
      expect(read.errors).toBeUndefined();
      expect(read.data.session?.messages.totalCount ?? 0).toBe(0);
    });
  }

  if (mode === 'own') {
    it('still bounds every operation on its own endpoint, meta fields alone included', async () => {
      const typenames = await sut.gql(`{ ${aliases(400, '__typename')} }`, undefined, as('ro'));
      expect(typenames.status).toBe(400);
      expect(codes(typenames)).toEqual(['QUERY_TOO_COMPLEX']);
      expect(typenames.errors?.[0].message).toMatch(/more than 1000 tokens/);
      const sessions = await sut.gql(`{ ${SCRIBE_ALIASES} }`, undefined, as('ro'));
      expect(codes(sessions)).toEqual(['QUERY_TOO_COMPLEX']);
    });
  }
});

describe("Scribe's refusal budget in 'host' mode", () => {
  let sut: ScribeTesting;
  const MAX = 3;

  beforeAll(async () => {
    sut = await createScribeTestingModule({
      imports: [HostModule, hostGraphQL.host],
      graphql: { mode: 'host' },
      options: {
        auth: { apiTokens: 'ro=read' },
        limits: { maxRefusalsPerMinute: MAX },
      },
    });
  });

  afterAll(async () => {
    await sut?.close();
  });

  it("spends nothing on the host's refusals of the host's operations", async () => {
    for (let i = 0; i < MAX * 2; i++) {
      const unknown = await sut.gql('{ hello nope }');
      expect(unknown.status).toBe(400);
      const own = await sut.gql('{ hostRefusal }');
      expect(codes(own)).toEqual(['BAD_REQUEST']);
      const meta = await sut.gql('{ __typename nope }', undefined, as('the-hosts-own-token'));
      expect(meta.status).toBe(400);
    }
    const hello = await sut.gql('{ hello }');
    expect(hello.status).toBe(200);
    expect(hello.data).toEqual({ hello: 'world' });
  });

  it("spends it on Scribe's refusals: its fields, its credentials, a body it read", async () => {
    const invalid = await sut.gql(
      '{ hello nope sessions(first: 1) { totalCount } }',
      undefined,
      as('ro'),
    );
    expect(invalid.status).toBe(400);
    const anonymous = await sut.gql(SESSIONS);
    expect(anonymous.status).toBe(401);
    const malformed = await fetch(`${sut.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"query": ',
    });
    expect(malformed.status).toBe(400);
    const turnedAway = await sut.gql('{ hello }');
    expect(turnedAway.status).toBe(429);
    expect(codes(turnedAway)).toEqual(['RATE_LIMITED']);
  });
});

// Found by the stranger (issues 04, 16): the host's own GraphQLModule options, with forHost.
describe("a host's own options in 'host' mode", () => {
  let sut: ScribeTesting;

  beforeAll(async () => {
    sut = await createScribeTestingModule({
      imports: [
        HostModule,
        hostGraphQLModule({
          // The host's own token limit, higher than Scribe's; and stack traces in its
          // answers, as Apollo gives them when NODE_ENV is unset.
          parseOptions: { maxTokens: 5000 },
          includeStacktraceInErrorResponses: true,
        }),
      ],
      graphql: { mode: 'host' },
      options: { auth: { apiTokens: 'ro=read' } },
    });
  });

  afterAll(async () => {
    await sut?.close();
  });

  it("answers a host's operation past Scribe's tokens under the host's parseOptions.maxTokens", async () => {
    const tokens = await sut.gql(`{ ${aliases(400, 'hello')} }`);
    expect(tokens.status).toBe(200);
    expect(tokens.errors).toBeUndefined();
    expect(Object.keys(tokens.data)).toHaveLength(400);
    const over = await sut.gql(`{ ${aliases(2000, 'hello')} }`);
    expect(over.status).toBe(400);
    // The host's limit, the host's answer (its formatting, not Scribe's message).
    expect(over.errors?.[0].message).toMatch(
      /Syntax Error: Document contains more th.. 5000 tokens/,
    );
  });

  it("formats Scribe's refusals as Scribe's, with no stack trace, the host's with its own", async () => {
    const one = 'sessions(first: 1) { totalCount }';
    for (const query of [
      `{ ${aliases(31, one)} }`,
      `{ ${one} ${aliases(400, 'hello')} }`,
      `{ ${one} ${deepHost(13)} }`,
    ]) {
      const refused = await sut.gql(query, undefined, as('ro'));
      expect(refused.status).toBe(400);
      expect(codes(refused)).toEqual(['QUERY_TOO_COMPLEX']);
      expect(refused.errors?.[0].extensions).toEqual({ code: 'QUERY_TOO_COMPLEX' });
    }
    const subscription = await sut.gql(LIVE, { s: 'x' }, as('ro'));
    expect(subscription.errors?.[0].extensions).toEqual({ code: 'BAD_REQUEST' });
    const hosts = await sut.gql('{ hostCoded }');
    expect(hosts.errors?.[0].extensions?.code).toBe('HOST_TEAPOT');
    expect(hosts.errors?.[0].extensions?.stacktrace).toEqual(expect.any(Array));
  });
});

// Found by the stranger (issue 06): a host's GraphQLModule under the app's global prefix
// served Scribe's fields at /api/graphql, where none of Scribe's HTTP steps stand.
describe("'host' mode under a global prefix", () => {
  it("refuses to start when the server of Scribe's fields is not on its path", async () => {
    const started = createScribeTestingModule({
      imports: [
        HostModule,
        GraphQLModule.forRootAsync<ApolloDriverConfig>({
          driver: ApolloDriver,
          inject: [ScribeGraphQL],
          // forHost refuses useGlobalPrefix itself; a host that sets it past forHost's back
          // is still refused at the start.
          useFactory: (scribe: ScribeGraphQL) => ({
            ...scribe.forHost({ autoSchemaFile: true }),
            path: '/elsewhere',
          }),
        }),
      ],
      graphql: { mode: 'host' },
      listen: false,
    });
    await expect(started).rejects.toThrow(
      /no GraphQL server mounted on its graphql.path \/graphql/,
    );
  });
});
