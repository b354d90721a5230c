import { connect } from 'node:net';
import { eventually, faultSuite } from './support/fault-helpers.js';

// Found by the stranger's attack on issue 18: clients that never read made the server hold
// every large answer (its slot was given back once serialised, not once written), 25 of them
// 93 MB each, 2.5 GB. Now a large answer keeps its slot until it is written, and a reader
// slower than a body may be sent is cut at that deadline, which frees the slot.
const { faultTest, server, dataDirectory } = faultSuite(60_000);

describe('a client that does not read its answer', () => {
  faultTest('holds a large answer slot only until its write deadline', async () => {
    const sut = await server({
      DATA_DIR: await dataDirectory(),
      MAX_LARGE_RESPONSES: '1',
      SESSION_RESOLVE_TIMEOUT_MS: '60000',
      BODY_TIMEOUT_MS: '1000',
      BODY_MIN_BYTES_PER_SECOND: '50000000',
    });
    // Each control character is 1 byte stored, 2 estimated and 6 in JSON: 6 MB a message.
    const content = '\u0001'.repeat(1_000_000);
    for (let i = 0; i < 5; i++) {
      const appended = await sut.gql(
        'mutation($input: AppendMessageInput!) { appendMessage(input: $input) { status } }',
        { input: { sessionId: 'big', role: 'USER', content } },
      );
      expect(appended.data?.appendMessage?.status).toBe('PERSISTED');
    }
    // Five pages of one message: about 10 MB estimated (a large answer, over MAX_PAGE_BYTES)
    // and 30 MB of JSON, asked by a socket that never reads: far more than its buffers hold.
    const query = `{ ${[0, 1, 2, 3, 4]
      .map((i) => `a${i}: session(id: "big") { messages(first: 1) { edges { node { content } } } }`)
      .join(' ')} }`;
    const body = JSON.stringify({ query });
    const { port } = new URL(sut.url);
    const stalled = connect({ host: '127.0.0.1', port: Number(port) });
    await new Promise<void>((resolve) => stalled.once('connect', () => resolve()));
    stalled.pause();
    let received = 0;
    const closed = new Promise<void>((resolve) => {
      stalled.on('error', () => undefined);
      stalled.once('close', () => resolve());
    });
    stalled.write(
      `POST /graphql HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    // The stalled reader holds the one slot once its answer starts to arrive (unread, in the
    // socket's buffer): the honest read is sent only then, or it could take the slot first.
    await eventually(() => expect(stalled.readableLength).toBeGreaterThan(0), 30_000, 20);
    // The honest large read waits for the one slot, and is answered once the stalled reader
    // is cut: before, the slot came back as soon as the stalled answer was serialised.
    const honest = await sut.gql(query);
    expect(honest.errors).toBeUndefined();
    expect(honest.data?.a4?.messages?.edges).toHaveLength(1);
    // Read at last: what the kernel buffered, then the end, since the server cut it. (Before,
    // the connection stayed open, the answer whole.)
    stalled.on('data', (chunk: Buffer) => (received += chunk.length));
    stalled.resume();
    await closed;
    expect(received).toBeLessThan(30_000_000);
    stalled.destroy();
  });
});
