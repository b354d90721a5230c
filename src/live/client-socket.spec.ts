import { Logger } from '@nestjs/common';
import { jest } from '@jest/globals';
import { type AddressInfo, type Socket } from 'node:net';
import { WebSocket, WebSocketServer, type RawData } from 'ws';
import { deferred, type Deferred } from '../common/testing/deferred.js';
import { ClientSocket, EARLY_DONE_BYTES } from './client-socket.js';

type SendCallback = (error?: Error) => void;

/** A server of ClientSockets on 127.0.0.1 and one client connected to it. */
interface Connection {
  server: ClientSocket;
  client: WebSocket;
  /** The server side's TCP socket (ws's `_socket`). */
  tcp: Socket;
  /** What the client has received, in order. */
  received: { text: string; binary: boolean }[];
  /** Resolves once the client has received `count` messages in all. */
  receivedCount: (count: number) => Promise<void>;
  /** The client's close code. */
  clientClosed: Promise<number>;
  /** Resolves when the server side's socket closes. */
  serverClosed: Promise<void>;
}

const servers: WebSocketServer[] = [];
const clients: WebSocket[] = [];

async function connect(options: { maxPayload?: number } = {}): Promise<Connection> {
  const wss = new WebSocketServer({
    host: '127.0.0.1',
    port: 0,
    WebSocket: ClientSocket,
    ...options,
  });
  servers.push(wss);
  await new Promise<void>((resolve) => wss.once('listening', resolve));
  const accepted = deferred<ClientSocket>();
  wss.once('connection', (socket: ClientSocket) => accepted.resolve(socket));
  const { port } = wss.address() as AddressInfo;
  const client = new WebSocket(`ws://127.0.0.1:${port}`);
  clients.push(client);
  const received: Connection['received'] = [];
  const waiters: { count: number; reached: Deferred }[] = [];
  client.on('message', (data: RawData, binary: boolean) => {
    received.push({ text: (data as Buffer).toString(), binary });
    for (const waiter of waiters) if (received.length >= waiter.count) waiter.reached.resolve();
  });
  const clientClosed = new Promise<number>((resolve) => client.once('close', resolve));
  await new Promise<void>((resolve, reject) => {
    client.once('open', resolve);
    client.once('error', reject);
  });
  const server = await accepted.promise;
  const serverClosed = new Promise<void>((resolve) => server.once('close', () => resolve()));
  return {
    server,
    client,
    tcp: tcpOf(server),
    received,
    receivedCount: (count) => {
      const reached = deferred();
      if (received.length >= count) reached.resolve();
      else waiters.push({ count, reached });
      return reached.promise;
    },
    clientClosed,
    serverClosed,
  };
}

function tcpOf(socket: WebSocket): Socket {
  return (socket as unknown as { _socket: Socket })._socket;
}

/** Counts the server's writes to the kernel, each with the number of chunks it carried. */
function countWrites(tcp: Socket): number[] {
  const writes: number[] = [];
  const raw = tcp as unknown as {
    _write: (chunk: unknown, encoding: string, callback: SendCallback) => void;
    _writev: (chunks: unknown[], callback: SendCallback) => void;
  };
  const write = raw._write.bind(tcp);
  const writev = raw._writev.bind(tcp);
  raw._write = (chunk, encoding, callback) => {
    writes.push(1);
    write(chunk, encoding, callback);
  };
  raw._writev = (chunks, callback) => {
    writes.push(chunks.length);
    writev(chunks, callback);
  };
  return writes;
}

/** Makes the server's next writes to the kernel fail with `code`. */
/** Writes the kernel never takes: what is written stays waiting. */
function stallWrites(tcp: Socket): void {
  Object.assign(tcp, { _write: () => undefined, _writev: () => undefined });
}

function failWrites(tcp: Socket, code: string): void {
  const fail = (callback: SendCallback) => callback(Object.assign(new Error(code), { code }));
  Object.assign(tcp, {
    _write: (_chunk: unknown, _encoding: string, callback: SendCallback) => fail(callback),
    _writev: (_chunks: unknown[], callback: SendCallback) => fail(callback),
  });
}

/** A send callback that records what it was called with and when. */
function recorder() {
  const calls: (Error | undefined)[] = [];
  const called = deferred<Error | undefined>();
  const callback = (...args: unknown[]) => {
    const error = args[0] as Error | undefined;
    calls.push(error);
    called.resolve(error);
  };
  return { callback, calls, called: called.promise };
}

const nextTick = () => new Promise<void>((resolve) => process.nextTick(resolve));
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A frame whose bytes in the buffer (4-byte header + payload) come to `bytes`. */
const frameOf = (bytes: number) => 'x'.repeat(bytes - 4);

describe(ClientSocket.name, () => {
  let debug: jest.SpiedFunction<Logger['debug']>;

  beforeEach(() => {
    debug = jest.spyOn(Logger.prototype, 'debug').mockImplementation(() => undefined);
  });

  afterEach(async () => {
    debug.mockRestore();
    for (const client of clients.splice(0)) client.terminate();
    await Promise.all(
      servers.splice(0).map((wss) => {
        for (const socket of wss.clients) socket.terminate();
        return new Promise((resolve) => wss.close(resolve));
      }),
    );
  });

  /** What ClientSocket logged at debug level, each line on the 'Subscriptions' logger. */
  const debugLines = () => {
    for (const logger of debug.mock.contexts) {
      expect((logger as { context: string }).context).toBe('Subscriptions');
    }
    return debug.mock.calls.map((call) => String(call[0]));
  };

  describe('the sends of one turn', () => {
    it('writes them to the kernel together, once the turn ends, and in order', async () => {
      const { server, tcp, received, receivedCount } = await connect();
      const writes = countWrites(tcp);

      for (let index = 1; index <= 5; index++) server.send(`message ${index}`);
      expect(tcp.writableCorked).toBe(1);
      expect(writes).toEqual([]);
      await nextTick();

      // Each frame is a header and a payload: ten chunks in one writev.
      expect(writes).toEqual([10]);
      expect(tcp.writableCorked).toBe(0);
      await receivedCount(5);
      expect(received.map((message) => message.text)).toEqual([
        'message 1',
        'message 2',
        'message 3',
        'message 4',
        'message 5',
      ]);
    });

    it("holds each turn's sends anew, and leaves no cork behind", async () => {
      const { server, tcp, received, receivedCount } = await connect();
      const writes = countWrites(tcp);

      server.send('a');
      await nextTurn();
      expect(tcp.writableCorked).toBe(0);
      server.send('b');
      server.send('c');
      await nextTurn();
      expect(tcp.writableCorked).toBe(0);
      server.send('d');
      await nextTurn();

      expect(writes).toEqual([2, 4, 2]);
      expect(tcp.writableCorked).toBe(0);
      await receivedCount(4);
      expect(received.map((message) => message.text)).toEqual(['a', 'b', 'c', 'd']);
    });

    it('holds nothing on a socket that is closing', async () => {
      const { server, tcp, clientClosed } = await connect();
      server.close(1000);
      const sent = recorder();

      server.send('too late', sent.callback);

      expect(tcp.writableCorked).toBe(0);
      expect(sent.calls).toStrictEqual([undefined]);
      expect(await clientClosed).toBe(1000);
    });
  });

  describe('when a send is done', () => {
    it('is at once, while little waits to be written', async () => {
      const { server, receivedCount } = await connect();
      const sent = recorder();

      server.send('hello', sent.callback);

      expect(sent.calls).toStrictEqual([undefined]);
      await receivedCount(1);
      expect(sent.calls).toStrictEqual([undefined]);
    });

    it('is at once, for a send with options too, which it passes on', async () => {
      const { server, received, receivedCount } = await connect();
      const sent = recorder();

      server.send('as binary', { binary: true }, sent.callback);
      server.send('as text', {});

      expect(sent.calls).toStrictEqual([undefined]);
      await receivedCount(2);
      expect(received).toEqual([
        { text: 'as binary', binary: true },
        { text: 'as text', binary: false },
      ]);
      expect(sent.calls).toStrictEqual([undefined]);
    });

    it('is when written, once EARLY_DONE_BYTES wait to be written', async () => {
      const { server, received, receivedCount } = await connect();
      const sent = recorder();
      const sentWithOptions = recorder();

      server.send(frameOf(EARLY_DONE_BYTES));
      expect(server.bufferedAmount).toBe(EARLY_DONE_BYTES);
      server.send('after', sent.callback);
      server.send('after, with options', { binary: false }, sentWithOptions.callback);
      server.send('without a callback');

      expect(sent.calls).toStrictEqual([]);
      expect(sentWithOptions.calls).toStrictEqual([]);
      // Written: ws passes on what the TCP socket says, no error.
      expect(await sent.called).toBeFalsy();
      expect(await sentWithOptions.called).toBeFalsy();
      await receivedCount(4);
      expect(received.slice(1).map((message) => message.text)).toEqual([
        'after',
        'after, with options',
        'without a callback',
      ]);
      expect(sent.calls).toHaveLength(1);
      expect(sentWithOptions.calls).toHaveLength(1);
    });

    it('is at once while what waits and this frame stay under EARLY_DONE_BYTES', async () => {
      const { server, receivedCount } = await connect();
      const sent = recorder();
      const late = recorder();

      server.send(frameOf(EARLY_DONE_BYTES - 6));
      expect(server.bufferedAmount).toBe(EARLY_DONE_BYTES - 6);
      server.send('after', sent.callback);
      expect(sent.calls).toStrictEqual([undefined]);
      // One byte more: this one would reach EARLY_DONE_BYTES.
      server.send('later', late.callback);
      expect(late.calls).toStrictEqual([]);

      await receivedCount(3);
      expect(sent.calls).toStrictEqual([undefined]);
      expect(late.calls).toHaveLength(1);
    });

    it('counts a frame by its bytes, not its characters', async () => {
      const { server } = await connect();
      const sent = recorder();
      server.send(frameOf(EARLY_DONE_BYTES - 20));
      // 10 characters, 25 bytes of UTF-8: past EARLY_DONE_BYTES by bytes only.
      server.send('é'.repeat(5) + '€'.repeat(5), sent.callback);
      expect(sent.calls).toStrictEqual([]);
      expect(await sent.called).toBeFalsy();
    });

    it('is when written past half of what the connection may hold', async () => {
      const { server, receivedCount } = await connect();
      server.maxBufferedBytes = 2000;
      const fits = recorder();
      const over = recorder();

      server.send(frameOf(900));
      server.send('x'.repeat(99), fits.callback);
      server.send('x', over.callback);

      expect(fits.calls).toStrictEqual([undefined]);
      expect(over.calls).toStrictEqual([]);
      await receivedCount(3);
      expect(over.calls).toHaveLength(1);
    });

    it('counts a Buffer by its bytes', async () => {
      const { server } = await connect();
      const sent = recorder();
      server.send(Buffer.alloc(EARLY_DONE_BYTES), sent.callback);
      expect(sent.calls).toStrictEqual([]);
      expect(await sent.called).toBeFalsy();
    });
  });

  describe('past maxBufferedBytes', () => {
    it('cuts the connection, and counts the send as done', async () => {
      const { server, tcp, clientClosed, received } = await connect();
      stallWrites(tcp);
      server.send(frameOf(1000));
      server.maxBufferedBytes = 999;
      const sent = recorder();

      server.send('one too many', sent.callback);

      expect(server.readyState).toBe(WebSocket.CLOSING);
      expect(tcp.destroyed).toBe(true);
      expect(await sent.called).toBeUndefined();
      expect(await clientClosed).toBe(1006);
      expect(sent.calls).toStrictEqual([undefined]);
      expect(received).toEqual([]);
      expect(debugLines()).toContainEqual(expect.stringContaining('1000 bytes unread'));
    });

    it("writes this turn's held frames before judging: they are not unread", async () => {
      const { server, tcp, receivedCount, received } = await connect();
      const writes = countWrites(tcp);
      server.send(frameOf(1000));
      server.maxBufferedBytes = 999;
      const sent = recorder();

      server.send('not too many', sent.callback);

      expect(server.readyState).toBe(WebSocket.OPEN);
      // The held frame went out on its own; the next is held again for the turn.
      expect(writes).toEqual([2]);
      await receivedCount(2);
      expect(received[1].text).toBe('not too many');
      expect(sent.calls).toHaveLength(1);
    });

    it('cuts a connection once asked to without a callback too', async () => {
      const { server, tcp, clientClosed } = await connect();
      server.maxBufferedBytes = -1;

      server.send('cut');

      expect(tcp.destroyed).toBe(true);
      expect(await clientClosed).toBe(1006);
    });

    it('keeps a connection with exactly maxBufferedBytes waiting', async () => {
      const { server, receivedCount } = await connect();
      server.send(frameOf(1000));
      server.maxBufferedBytes = 1000;
      const sent = recorder();

      server.send('still fits', sent.callback);

      expect(server.readyState).toBe(WebSocket.OPEN);
      await receivedCount(2);
      expect(sent.calls).toHaveLength(1);
      expect(sent.calls[0]).toBeFalsy();
    });
  });

  describe('a send that fails', () => {
    it.each(['ECONNRESET', 'EPIPE', 'ERR_STREAM_DESTROYED', 'ERR_STREAM_WRITE_AFTER_END'])(
      'counts as done when the client is gone (%s)',
      async (code) => {
        const { server, tcp } = await connect();
        const sent = recorder();
        const early = recorder();

        server.send(frameOf(EARLY_DONE_BYTES), early.callback);
        server.send('lost', sent.callback);
        server.send('lost too');
        failWrites(tcp, code);

        expect(await sent.called).toBeUndefined();
        expect(sent.calls).toStrictEqual([undefined]);
        expect(early.calls).toStrictEqual([undefined]);
        expect(debugLines()).toEqual([
          `A send failed once told done: ${code}`,
          `A send found the client gone: ${code}`,
          `A send found the client gone: ${code}`,
        ]);
      },
    );

    it('passes on any other error while the connection is open', async () => {
      const { server, tcp } = await connect();
      const sent = recorder();
      const sentWithOptions = recorder();

      server.send(frameOf(EARLY_DONE_BYTES));
      server.send('lost', sent.callback);
      server.send('lost too', { binary: true }, sentWithOptions.callback);
      failWrites(tcp, 'EIO');

      expect((await sent.called)?.message).toBe('EIO');
      expect((await sentWithOptions.called)?.message).toBe('EIO');
      expect(sent.calls).toHaveLength(1);
      expect(sentWithOptions.calls).toHaveLength(1);
      expect(debugLines()).toEqual(['A send failed once told done: EIO']);
    });

    it('counts as done on a connection that is no longer open, whatever the error', async () => {
      const { server, client, serverClosed } = await connect();
      client.terminate();
      await serverClosed;
      const sent = recorder();

      // Sent after the close, a send fails with ws's "not open"; past EARLY_DONE_BYTES (ws
      // counts the payload of a send after the close as waiting) it is done only then.
      expect(() => server.send('x'.repeat(EARLY_DONE_BYTES - 2))).not.toThrow();
      server.send('gone', sent.callback);

      expect(sent.calls).toStrictEqual([]);
      expect(await sent.called).toBeUndefined();
      expect(sent.calls).toStrictEqual([undefined]);
      expect(debugLines()).toEqual([
        'A send failed once told done: WebSocket is not open: readyState 3 (CLOSED)',
        'A send found the client gone: WebSocket is not open: readyState 3 (CLOSED)',
      ]);
    });

    it('counts as done, at once, on a socket whose peer is gone', async () => {
      const { server, client, serverClosed } = await connect();
      client.terminate();
      await serverClosed;
      const sent = recorder();

      expect(() => server.send('gone', sent.callback)).not.toThrow();

      expect(sent.calls).toStrictEqual([undefined]);
      await nextTurn();
      expect(sent.calls).toStrictEqual([undefined]);
    });

    it('counts as done when the socket is destroyed under waiting sends', async () => {
      const { server, tcp } = await connect();
      const sent = recorder();

      server.send(frameOf(EARLY_DONE_BYTES));
      server.send('lost', sent.callback);
      tcp.destroy();

      expect(await sent.called).toBeUndefined();
      expect(sent.calls).toStrictEqual([undefined]);
    });
  });

  describe('a frame the client got wrong', () => {
    it('closes the connection with 1009 and keeps the error from listeners', async () => {
      const { server, client, clientClosed, serverClosed } = await connect({ maxPayload: 1024 });
      const errors: unknown[] = [];
      server.on('error', (error) => errors.push(error));

      client.send('x'.repeat(2048));

      expect(await clientClosed).toBe(1009);
      await serverClosed;
      expect(errors).toEqual([]);
      expect(debugLines()).toEqual([
        'Closed a connection that sent a bad frame: Max payload size exceeded',
      ]);
    });

    it('says it was handled', async () => {
      const { server } = await connect();
      const code = 'WS_ERR_INVALID_OPCODE';
      const frameError = Object.assign(new Error('bad'), { code });
      const listener = jest.fn();
      server.on('error', listener);

      expect(server.emit('error', frameError)).toBe(true);
      expect(listener).not.toHaveBeenCalled();
    });
  });

  describe('any other event', () => {
    it('reaches listeners as it is: other errors, and errors with no ws code', async () => {
      const { server } = await connect();
      const listener = jest.fn();
      server.on('error', listener);
      const [reset, notAtStart, frameCode] = ['ECONNRESET', 'X_WS_ERR_', 'WS_ERR_INVALID_OPCODE'];
      const withOtherCode = Object.assign(new Error('reset'), { code: reset });
      const endingInWsCode = Object.assign(new Error('odd'), { code: notAtStart });
      const withNumberCode = Object.assign(new Error('numbered'), { code: 42 });
      const notAnError = { code: frameCode };
      const plain = new Error('plain');

      for (const error of [withOtherCode, endingInWsCode, withNumberCode, notAnError, plain]) {
        expect(server.emit('error', error)).toBe(true);
      }
      expect(server.emit('error')).toBe(true);

      expect(listener.mock.calls).toStrictEqual([
        [withOtherCode],
        [endingInWsCode],
        [withNumberCode],
        [notAnError],
        [plain],
        [],
      ]);
      expect(debugLines()).toEqual([]);
    });

    it('reaches listeners with its arguments, and says whether any listened', async () => {
      const { server } = await connect();
      const listener = jest.fn();
      server.on('custom', listener);

      const code = 'WS_ERR_INVALID_OPCODE';
      const frameError = Object.assign(new Error('bad'), { code });

      expect(server.emit('custom', 1, 'two')).toBe(true);
      // Only an 'error' is kept back, however like a frame error the argument looks.
      expect(server.emit('custom', frameError)).toBe(true);
      expect(server.emit('unheard', 3)).toBe(false);
      expect(listener.mock.calls).toStrictEqual([[1, 'two'], [frameError]]);
    });
  });
});
