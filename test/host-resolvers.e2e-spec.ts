import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import { BadRequestException, Module } from '@nestjs/common';
import { GraphQLModule, Query, Resolver } from '@nestjs/graphql';
import { GraphQLError } from 'graphql';
import { type Client } from 'graphql-ws';
import { type Server } from 'node:http';
import WebSocket, { WebSocketServer } from 'ws';
import { ScribeGraphQL } from '../src/graphql/scribe-graphql.js';
import { createScribeTestingModule, type ScribeTesting } from '../src/kit/index.js';
import { LiveChannels } from '../src/live/live-channels.js';
import { eventually, liveClient, subscribe } from './support/live-client.js';

@Resolver()
class HostResolver {
  @Query(() => String)
  hello(): string {
    return 'world';
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

// The host's own GraphQL beside Scribe's: at /host ('own', Scribe's endpoint stays at
// /graphql), or one endpoint at /graphql that serves both ('host', through forHost).
const hostGraphQL = {
  own: GraphQLModule.forRoot<ApolloDriverConfig>({
    driver: ApolloDriver,
    path: '/host',
    autoSchemaFile: true,
    include: [HostModule],
  }),
  host: GraphQLModule.forRootAsync<ApolloDriverConfig>({
    driver: ApolloDriver,
    inject: [ScribeGraphQL],
    useFactory: (scribe: ScribeGraphQL) => scribe.forHost({ autoSchemaFile: true }),
  }),
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

  const host = (query: string, headers: Record<string, string> = {}) =>
    sut.gql(query, undefined, headers, hostPath);

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

  it('answers /health and /metrics', async () => {
    const health = await fetch(`${sut.url}/health`);
    expect(health.status).toBe(200);
    const metrics = await fetch(`${sut.url}/metrics`);
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toMatch(/^scribe_/m);
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
    // Scribe's validation rules (aliases, directives, depth) are added to the host's in 'host'
    // mode and bound the whole document, the host's fields included: see the report.
  }
});
