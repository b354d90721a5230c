import { faultSuite } from './support/fault-helpers.js';
import { postHead, RawConnection } from './support/raw-http.js';
import { type ServerProcess } from './support/server-process.js';

// What a request costs before its credentials and its bytes are known, on real sockets against
// the built server: refused credentials are answered from the head alone and the connection
// closed, unread; every refusal spends the source's budget as it happens; and a head or a body
// that does not arrive in time is cut. Each source address is its own (127.0.0.0/8).
const { faultTest, server, dataDirectory } = faultSuite(60_000);
const TOKENS = { API_TOKENS: 'good=read+append' };
const QUERY = JSON.stringify({ query: '{ __typename }' });
const connections: RawConnection[] = [];
afterEach(() => connections.splice(0).forEach((connection) => connection.destroy()));

async function connect(sut: ServerProcess, localAddress: string): Promise<RawConnection> {
  const connection = new RawConnection(sut.url, localAddress);
  connections.push(connection);
  await connection.connected();
  return connection;
}

/** One well-formed request on a connection of its own; the answer's status. */
async function statusOf(sut: ServerProcess, localAddress: string, token = 'good') {
  const connection = await connect(sut, localAddress);
  await connection.write(
    postHead(Buffer.byteLength(QUERY), { Authorization: `Bearer ${token}`, Connection: 'close' }) +
      QUERY,
  );
  return (await connection.answer()).status;
}

describe('credentials before bodies', () => {
  faultTest(
    'a bad token is answered 401 from the head alone, and the connection closed',
    async () => {
      const sut = await server({ DATA_DIR: await dataDirectory(), ...TOKENS });
      const connection = await connect(sut, '127.0.0.11');
      // 8 MiB declared (within MAX_BODY_BYTES), not one byte of it sent.
      await connection.write(postHead(8 * 1024 * 1024, { Authorization: 'Bearer nope' }));
      const answer = await connection.answer();
      expect(answer.status).toBe(401);
      expect(answer.headers.connection).toBe('close');
      expect(answer.body).toEqual({
        errors: [
          {
            message: 'The bearer token is not one this server accepts',
            extensions: { code: 'UNAUTHENTICATED' },
          },
        ],
      });
      expect(answer.closedByServer).toBe(true);
      // The server goes on answering good credentials.
      expect(await statusOf(sut, '127.0.0.11')).toBe(200);
    },
  );

  faultTest(
    'Expect: 100-continue: a bad token is refused without an invitation, a good one invited',
    async () => {
      const sut = await server({ DATA_DIR: await dataDirectory(), ...TOKENS });
      const refused = await connect(sut, '127.0.0.13');
      await refused.write(
        postHead(8 * 1024 * 1024, { Authorization: 'Bearer nope', Expect: '100-continue' }),
      );
      // Node wrote "100 Continue" before anything was checked: the first status was 100.
      const answer = await refused.answer();
      expect(answer.status).toBe(401);
      expect(answer.closedByServer).toBe(true);
      const invited = await connect(sut, '127.0.0.13');
      const firstBytes = new Promise<string>((resolve) =>
        invited.socket.once('data', (chunk: Buffer) => resolve(chunk.toString('latin1'))),
      );
      await invited.write(
        postHead(Buffer.byteLength(QUERY), {
          Authorization: 'Bearer good',
          Expect: '100-continue',
          Connection: 'close',
        }),
      );
      expect(await firstBytes).toMatch(/^HTTP\/1\.1 100 Continue\r\n/);
      await invited.write(QUERY);
      // The answer follows the invitation: what is read after the 100 is the 200 and its body.
      const after = String((await invited.answer()).body);
      expect(after).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*\{"data":\{"__typename":"Query"\}\}/);
    },
  );

  faultTest(
    'a client that keeps sending still reads its 401, and the body is not drained',
    async () => {
      const sut = await server({
        DATA_DIR: await dataDirectory(),
        ...TOKENS,
        MAX_BODY_BYTES: String(256 * 1024 * 1024),
      });
      const declared = 200 * 1024 * 1024;
      const connection = await connect(sut, '127.0.0.12');
      const answer = connection.answer();
      let written = 0;
      if (await connection.write(postHead(declared, { Authorization: 'Bearer nope' }))) {
        const chunk = Buffer.alloc(256 * 1024, 0x20);
        while (written < declared && (await connection.write(chunk))) written += chunk.length;
      }
      expect((await answer).status).toBe(401);
      // The server closed under the writer long before the body was all sent (kernel buffers
      // hold a few MiB at most).
      expect(written).toBeLessThan(declared / 4);
    },
  );

  faultTest(
    'concurrent refused requests of one source spend its budget as they are refused: those past it are answered 429',
    async () => {
      const sut = await server({
        DATA_DIR: await dataDirectory(),
        ...TOKENS,
        MAX_REFUSALS_PER_MINUTE: '5',
      });
      // Twelve heads at once, each declaring a body that is never sent: all in flight together.
      const refused = await Promise.all(
        Array.from({ length: 12 }, () => connect(sut, '127.0.0.13')),
      );
      await Promise.all(
        refused.map((connection) =>
          connection.write(postHead(1000, { Authorization: 'Bearer nope' })),
        ),
      );
      const statuses = (await Promise.all(refused.map((connection) => connection.answer()))).map(
        (answer) => answer.status,
      );
      expect(statuses.filter((status) => status === 401)).toHaveLength(5);
      expect(statuses.filter((status) => status === 429)).toHaveLength(7);
      // Spent for good credentials too; another source is untouched.
      expect(await statusOf(sut, '127.0.0.13')).toBe(429);
      expect(await statusOf(sut, '127.0.0.14')).toBe(200);
    },
  );
});

describe('deadlines for heads and bodies', () => {
  faultTest(
    'a body slower than BODY_MIN_BYTES_PER_SECOND is cut at its deadline: 408, coded, closed and charged',
    async () => {
      const sut = await server({
        DATA_DIR: await dataDirectory(),
        ...TOKENS,
        MAX_REFUSALS_PER_MINUTE: '1',
        BODY_TIMEOUT_MS: '300',
        BODY_MIN_BYTES_PER_SECOND: '1024',
      });
      const connection = await connect(sut, '127.0.0.15');
      await connection.write(postHead(100_000, { Authorization: 'Bearer good' }));
      await connection.write('{"query":');
      const answer = await connection.answer();
      expect(answer.status).toBe(408);
      expect(answer.headers.connection).toBe('close');
      expect(answer.body).toEqual({
        errors: [
          {
            message: expect.stringMatching(/BODY_TIMEOUT_MS.*BODY_MIN_BYTES_PER_SECOND/),
            extensions: { code: 'REQUEST_TIMEOUT' },
          },
        ],
      });
      expect(answer.closedByServer).toBe(true);
      // The cut spent the source's one refusal.
      expect(await statusOf(sut, '127.0.0.15')).toBe(429);
    },
  );

  faultTest('a body that keeps up with the minimum rate is read past the base', async () => {
    const sut = await server({
      DATA_DIR: await dataDirectory(),
      ...TOKENS,
      BODY_TIMEOUT_MS: '1000',
      BODY_MIN_BYTES_PER_SECOND: '1024',
    });
    const body = JSON.stringify({ query: `{ __typename ${' '.repeat(20 * 1024)}}` });
    const connection = await connect(sut, '127.0.0.16');
    await connection.write(postHead(Buffer.byteLength(body), { Authorization: 'Bearer good' }));
    // 2 KiB every 100 ms: about twenty times the minimum rate, for about a second.
    for (let sent = 0; sent < body.length; sent += 2048) {
      await connection.write(body.slice(sent, sent + 2048));
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    connection.socket.end();
    const answer = await connection.answer();
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ data: { __typename: 'Query' } });
  });

  faultTest(
    'a head that does not arrive within HEADERS_TIMEOUT_MS is cut and charged',
    async () => {
      const sut = await server({
        DATA_DIR: await dataDirectory(),
        ...TOKENS,
        MAX_REFUSALS_PER_MINUTE: '1',
        HEADERS_TIMEOUT_MS: '500',
      });
      const connection = await connect(sut, '127.0.0.17');
      await connection.write('POST /graphql HTTP/1.1\r\nHost: scribe.test\r\n');
      const answer = await connection.answer();
      expect(answer.status).toBe(408);
      expect(answer.body).toEqual({
        errors: [
          {
            message: expect.stringMatching(/HEADERS_TIMEOUT_MS/),
            extensions: { code: 'REQUEST_TIMEOUT' },
          },
        ],
      });
      expect(answer.closedByServer).toBe(true);
      expect(await statusOf(sut, '127.0.0.17')).toBe(429);
    },
  );
});
