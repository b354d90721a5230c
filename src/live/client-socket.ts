import { Logger } from '@nestjs/common';
import { type Socket } from 'node:net';
import { WebSocket } from 'ws';

const logger = new Logger('Subscriptions');

/** ws's errors for a frame the client got wrong: too large, not UTF-8, unmasked, bad opcode. */
function isClientFrameError(error: unknown): error is Error {
  const code = (error as { code?: unknown } | undefined)?.code;
  return error instanceof Error && typeof code === 'string' && code.startsWith('WS_ERR_');
}

/** A send that failed because the client went away (reset, closed pipe, socket destroyed). */
function isGoneError(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return ['ECONNRESET', 'EPIPE', 'ERR_STREAM_DESTROYED', 'ERR_STREAM_WRITE_AFTER_END'].includes(
    String(code),
  );
}

type SendCallback = (error?: Error) => void;

/**
 * Bytes a connection may have waiting to be written while its sends are still told done at
 * once (see ClientSocket). Past it, a send is done when written, as ws tells it.
 */
export const EARLY_DONE_BYTES = 64 * 1024;

/**
 * The server's WebSocket for each connection, where what a client does wrong is the client's:
 * - A frame it got wrong: ws closes the connection with the matching code (1009 past the size
 *   limit, 1007, 1002) and then emits 'error', which graphql-ws would log on the console as
 *   the server's fault. Kept to a debug line.
 * - Not reading: ws queues every send in memory, and graphql-ws answers every message it gets
 *   (errors, pongs) however many are unread. Past `maxBufferedBytes` waiting to be written the
 *   connection is cut, so memory stays bounded.
 * - Going away: a send to a reset or closed socket fails, and graphql-ws logs a stack for each.
 *   Nobody is there to tell; it counts as sent.
 * - Many events at once: graphql-ws sends a subscription's next event only when the last one
 *   is written, and ws writes each frame with a system call of its own. One commit of several
 *   messages, told to 100 subscribers, was hundreds of writes: the largest share of the
 *   server's CPU under fan-out (issue 24's profile). The sends of one turn of the event loop
 *   are held (corked) and written together when it ends, and while less than
 *   EARLY_DONE_BYTES wait to be written a send is done at once, so that the next event joins
 *   the same write. A client that does not keep up soon has more waiting than that: its sends
 *   are then done only when written, and its feed fills (SLOW_CONSUMER) as before.
 */
export class ClientSocket extends WebSocket {
  maxBufferedBytes = Number.POSITIVE_INFINITY;
  /** Whether this turn's sends are held (corked) to be written together. */
  private holding = false;

  override emit(event: string | symbol, ...args: unknown[]): boolean {
    if (event === 'error' && isClientFrameError(args[0])) {
      logger.debug(`Closed a connection that sent a bad frame: ${args[0].message}`);
      return true;
    }
    return super.emit(event, ...args);
  }

  override send(data: unknown, options?: unknown, callback?: unknown): void {
    const done = (typeof options === 'function' ? options : callback) as SendCallback | undefined;
    const settle: SendCallback = (error) => {
      if (error && (isGoneError(error) || this.readyState !== WebSocket.OPEN)) {
        logger.debug(`A send found the client gone: ${error.message}`);
        done?.();
        return;
      }
      done?.(error);
    };
    // This turn's frames are held, not unread: they go to the kernel before anything is judged.
    if (this.bufferedAmount > this.maxBufferedBytes) this.releaseTurn();
    if (this.bufferedAmount > this.maxBufferedBytes) {
      logger.debug(
        `Cut a connection with ${this.bufferedAmount} bytes unread (SUBSCRIPTION_BUFFER_BYTES)`,
      );
      this.terminate();
      settle();
      return;
    }
    this.holdTurn();
    // Done at once only while this frame too fits, in a share of what the connection may hold:
    // a frame done at once lets the next one follow in the same turn.
    const size = typeof data === 'string' ? Buffer.byteLength(data) : byteLengthOf(data);
    const early =
      this.bufferedAmount + size < Math.min(EARLY_DONE_BYTES, this.maxBufferedBytes / 2);
    // Told done already: a failure later ends the connection, as graphql-ws would end it.
    const written: SendCallback = early
      ? (error) => error && logger.debug(`A send failed once told done: ${error.message}`)
      : settle;
    if (typeof options === 'function' || options === undefined) {
      super.send(data as Buffer, written);
    } else {
      super.send(data as Buffer, options as Parameters<WebSocket['send']>[1], written);
    }
    if (early) done?.();
  }

  /** Corks the connection's TCP socket until this turn's sends are made (see above). */
  private holdTurn(): void {
    // ws keeps the TCP socket to itself (`_socket`); it corks it around each frame, and a
    // frame written under an outer cork waits for it.
    const socket = (this as unknown as { _socket?: Socket })._socket;
    if (this.holding || !socket || this.readyState !== WebSocket.OPEN) return;
    this.holding = true;
    socket.cork();
    // (Released early, this tick may end a hold made since: that costs batching, never order:
    // cork and uncork stay paired.)
    process.nextTick(() => this.releaseTurn());
  }

  /** Writes what this turn holds. */
  private releaseTurn(): void {
    if (!this.holding) return;
    this.holding = false;
    (this as unknown as { _socket?: Socket })._socket?.uncork();
  }
}

/** The bytes of what ws sends that is not a string (a Buffer, an ArrayBuffer, a view). */
function byteLengthOf(data: unknown): number {
  return (data as { byteLength?: number } | null)?.byteLength ?? 0;
}
