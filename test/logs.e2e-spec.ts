import request from 'supertest';
import WebSocket from 'ws';
import { startServer, temporaryDataDir } from './support/server-process.js';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** The lines a process wrote so far (stdout and stderr), the last one complete. */
const linesOf = (output: string) => output.split('\n').filter((line) => line !== '');

describe('logs of a real server process', () => {
  it('as text, piped: a few start-up lines, no colour codes, the access line with its id', async () => {
    const dataDir = await temporaryDataDir();
    // NO_COLOR unset: output that is not a terminal gets no colours of itself.
    const server = await startServer({ DATA_DIR: dataDir.path, NO_COLOR: '', LOG_ACCESS: 'true' });
    try {
      const start = linesOf(server.output());
      // Version, database, journal, URL, and what the database and journal say they did;
      // nothing of Nest's wiring (InstanceLoader, RoutesResolver, RouterExplorer, ...).
      expect(start.length).toBeLessThanOrEqual(8);
      expect(
        start.filter((line) => /InstanceLoader|RouterExplorer|RoutesResolver/.test(line)),
      ).toEqual([]);
      expect(start).toEqual(
        expect.arrayContaining([
          expect.stringMatching(/LOG \[Scribe\] Scribe \d+\.\d+\.\d+/),
          expect.stringMatching(/LOG \[Scribe\] Database: SQLite at .*scribe\.sqlite$/),
          expect.stringMatching(/LOG \[Scribe\] Journal: .*pending_messages$/),
        ]),
      );

      const health = await request(server.url).get('/health').set('x-request-id', 'text-req-1');
      expect(health.headers['x-request-id']).toBe('text-req-1');
      await server.waitForOutput(/\[Access\] \[request text-req-1\] GET \/health - 200 /);
      expect(server.output()).not.toContain('\x1b');
    } finally {
      await server.stop();
      await dataDir.remove();
    }
  });

  it('as JSON: every line an object with its fields, a request id in each line it causes', async () => {
    const dataDir = await temporaryDataDir();
    const server = await startServer({
      DATA_DIR: dataDir.path,
      LOG_FORMAT: 'json',
      LOG_LEVEL: 'debug',
      API_TOKENS: 'writer=read+append',
      NO_COLOR: '',
    });
    try {
      const refused = await server.gql(
        'query Refused { sessions(first: -1) { edges { node { id } } } }',
        undefined,
        { 'x-request-id': 'json-req-1', authorization: 'Bearer writer' },
      );
      expect(refused.errors?.[0].extensions?.code).toBe('BAD_USER_INPUT');
      const unknownToken = await server.gql('{ __typename }', undefined, {
        'x-request-id': 'json-req-2',
        authorization: 'Bearer not-a-token',
      });
      expect(unknownToken.status).toBe(401);
      const { headers } = await request(server.url)
        .get('/health')
        .set('x-request-id', 'json-req-3');
      expect(headers['x-request-id']).toBe('json-req-3');
      // A caller's id that is not a plain token is replaced, not echoed.
      const replaced = await request(server.url).get('/health').set('x-request-id', 'a b');
      expect(replaced.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);

      // A WebSocket connection is a request too: its id on the 101 answer and its access line.
      const socket = new WebSocket(
        `${server.url.replace('http', 'ws')}/graphql`,
        'graphql-transport-ws',
        {
          headers: { 'x-request-id': 'json-ws-1' },
        },
      );
      const upgraded = await new Promise<string | string[] | undefined>((resolve, reject) => {
        socket.once('upgrade', (response) => resolve(response.headers['x-request-id']));
        socket.once('error', reject);
      });
      expect(upgraded).toBe('json-ws-1');
      socket.close();

      await server.waitForOutput(/"message":"GET \/graphql - 101 [^"]*","requestId":"json-ws-1"/);
      await server.waitForOutput(/"message":"GET \/health - 200 [^"]*","requestId":"json-req-3"/);
      const lines = linesOf(server.output()).map((line) => JSON.parse(line));
      for (const line of lines) {
        expect(Object.keys(line).slice(0, 5)).toEqual([
          'time',
          'level',
          'context',
          'message',
          'requestId',
        ]);
        expect(line.time).toMatch(ISO);
      }
      const of = (requestId: string) =>
        lines
          .filter((line) => line.requestId === requestId)
          .map(({ level, context, message }) => ({ level, context, message }));
      expect(of('json-req-1')).toEqual([
        {
          level: 'debug',
          context: 'GraphQLErrors',
          message: 'Refused sessions: first: must not be less than 1',
        },
        {
          level: 'debug',
          context: 'Access',
          message: expect.stringMatching(/^POST \/graphql Refused 200 \d+\.\d ms$/),
        },
      ]);
      expect(of('json-req-2')).toEqual([
        {
          level: 'warn',
          context: expect.any(String),
          message: expect.stringContaining('Refused a request from 127.0.0.1: UNAUTHENTICATED'),
        },
        {
          level: 'debug',
          context: 'Access',
          message: expect.stringMatching(/^POST \/graphql - 401 /),
        },
      ]);
      // Start-up lines belong to no request.
      expect(
        lines.find((line) => /^GraphQL API ready at/.test(line.message))?.requestId,
      ).toBeNull();
      expect(server.output()).not.toContain('\x1b');
    } finally {
      await server.stop();
      await dataDir.remove();
    }
  });
});
