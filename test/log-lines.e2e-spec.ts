import { startServer, temporaryDataDir } from './support/server-process.js';

// A JWT whose header is valid and whose payload is not JSON: the verifier's SyntaxError quoted
// the payload, which reached the WARN line raw.
const HEADER = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64url');
const FORGED = '\r\n[Nest] 1  - 12/01/2026, 10:00:00 AM   ERROR [Access] forged\x1b[31m\x00';
const payload = (text: string) => Buffer.from(`x${text}`).toString('base64url');

// eslint-disable-next-line no-control-regex
const RAW_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029]/;

describe('log lines of a real server process', () => {
  it('carry no CR, LF, ESC or NUL from a client, however they come in', async () => {
    const dataDir = await temporaryDataDir();
    const server = await startServer({
      DATA_DIR: dataDir.path,
      JWT_SECRET: 'a-long-test-secret-of-32-bytes!!',
      API_TOKENS: 'writer=read+append',
      LOG_LEVEL: 'debug',
    });
    try {
      const refused = await server.gql('{ __typename }', undefined, {
        authorization: `Bearer ${HEADER}.${payload(FORGED)}.c2ln`,
      });
      expect(refused.status).toBe(401);
      expect(refused.errors?.[0].extensions?.code).toBe('UNAUTHENTICATED');
      // Nothing of the payload goes back either: the reason is the server's own.
      expect(refused.errors?.[0].message).toBe(
        'The bearer JWT is not valid: its header or payload is not JSON',
      );
      // A value graphql-js quotes in its refusal (JSON-escaped: C0 is safe, C1 and U+2028 are
      // not), logged at debug.
      const bad = await server.gql(
        `mutation($input: AppendMessageInput!) { appendMessage(input: $input) { status } }`,
        { input: { sessionId: 'log-lines', role: `\u009b31m\u2028${FORGED}`, content: 'x' } },
        { authorization: 'Bearer writer' },
      );
      expect(bad.errors?.[0].extensions?.code).toBe('BAD_USER_INPUT');
      await server.waitForOutput(/Refused .*MessageRole/, 10_000);
      await server.waitForOutput(/Refused a request from/, 10_000);
      const lines = server.output().split('\n');
      // Every line the server wrote is one of its own: none starts with what the client sent.
      expect(lines.filter((line) => line.startsWith('[Nest] 1 '))).toEqual([]);
      expect(lines.filter((line) => RAW_CONTROL.test(line))).toEqual([]);
      expect(server.output()).not.toContain('forged\x1b');
    } finally {
      await server.stop();
      await dataDir.remove();
    }
  });
});
