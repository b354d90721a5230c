import { Logger } from '@nestjs/common';
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
 * The server's WebSocket for each connection, where what a client does wrong is the client's:
 * - A frame it got wrong: ws closes the connection with the matching code (1009 past the size
 *   limit, 1007, 1002) and then emits 'error', which graphql-ws would log on the console as
 *   the server's fault. Kept to a debug line.
 * - Not reading: ws queues every send in memory, and graphql-ws answers every message it gets
 *   (errors, pongs) however many are unread. Past `maxBufferedBytes` waiting to be written the
 *   connection is cut, so memory stays bounded.
 * - Going away: a send to a reset or closed socket fails, and graphql-ws logs a stack for each.
 *   Nobody is there to tell; it counts as sent.
 */
export class ClientSocket extends WebSocket {
  maxBufferedBytes = Number.POSITIVE_INFINITY;

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
    if (this.bufferedAmount > this.maxBufferedBytes) {
      logger.debug(
        `Cut a connection with ${this.bufferedAmount} bytes unread (SUBSCRIPTION_BUFFER_BYTES)`,
      );
      this.terminate();
      settle();
      return;
    }
    if (typeof options === 'function' || options === undefined) {
      super.send(data as Buffer, settle);
    } else {
      super.send(data as Buffer, options as Parameters<WebSocket['send']>[1], settle);
    }
  }
}
