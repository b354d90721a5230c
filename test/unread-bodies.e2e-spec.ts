import { faultSuite } from './support/fault-helpers.js';
import { RawConnection } from './support/raw-http.js';

// Found by the stranger's attack on issue 18: a body sent where nothing reads it (any path but
// /graphql, e.g. a 404, or /graphql when the JSON parser skips it: a Content-Type other than
// JSON) gets no body deadline and no MAX_BODY_BYTES. The answer goes out at once, without
// `Connection: close`, and Node then reads and discards the rest of the body to keep the
// connection alive, for as long as the client sends it, until `requestTimeout` (281 s with the
// defaults). With no credentials at all, one connection streaming a chunked body to /nope
// pegged a core for as long as it ran (3.6 GB in 8 s) and moved an honest request's latency
// from ~8 ms to ~55 ms; one trickling a byte a second was held for the whole requestTimeout.
// Expected: a refusal answered before its body is read closes the connection, as 401 and 413 do.
const { faultTest, server, dataDirectory } = faultSuite(60_000);
const connections: RawConnection[] = [];
afterEach(() => connections.splice(0).forEach((connection) => connection.destroy()));

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('a body nothing reads', () => {
  for (const [name, requestLine, contentType] of [
    ['POST /nope', 'POST /nope HTTP/1.1', 'Content-Type: application/json'],
    ['POST /graphql as text/plain', 'POST /graphql HTTP/1.1', 'Content-Type: text/plain'],
  ]) {
    faultTest(`${name}: the connection is closed, not drained past BODY_TIMEOUT_MS`, async () => {
      const sut = await server({
        DATA_DIR: await dataDirectory(),
        API_TOKENS: 'good=read',
        BODY_TIMEOUT_MS: '500',
      });
      const connection = new RawConnection(sut.url, '127.0.0.41');
      connections.push(connection);
      await connection.connected();
      await connection.write(
        `${requestLine}\r\nHost: scribe.test\r\nAuthorization: Bearer good\r\n${contentType}\r\n` +
          'Transfer-Encoding: chunked\r\n\r\n',
      );
      const answered = connection.answer(8_000);
      // A byte a second: far below BODY_MIN_BYTES_PER_SECOND, well past BODY_TIMEOUT_MS.
      let accepted = 0;
      for (let i = 0; i < 6; i++) {
        await sleep(1000);
        if (!(await connection.write('1\r\na\r\n'))) break;
        accepted++;
      }
      const answer = await answered;
      expect(answer.closedByServer).toBe(true);
      expect(accepted).toBeLessThan(4);
    });
  }
});
