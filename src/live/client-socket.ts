import { Logger } from '@nestjs/common';
import { WebSocket } from 'ws';

const logger = new Logger('Subscriptions');

/** ws's errors for a frame the client got wrong: too large, not UTF-8, unmasked, bad opcode. */
function isClientFrameError(error: unknown): error is Error {
  const code = (error as { code?: unknown } | undefined)?.code;
  return error instanceof Error && typeof code === 'string' && code.startsWith('WS_ERR_');
}

/**
 * The server's WebSocket for each connection. When a client sends a frame it got wrong, ws
 * closes the connection with the matching code (1009 for one past the size limit, 1007, 1002)
 * and then emits 'error'; graphql-ws logs every such error on the console as the server's own
 * fault. A client's mistake is kept to a debug line here, as it is over HTTP.
 */
export class ClientSocket extends WebSocket {
  override emit(event: string | symbol, ...args: unknown[]): boolean {
    if (event === 'error' && isClientFrameError(args[0])) {
      logger.debug(`Closed a connection that sent a bad frame: ${args[0].message}`);
      return true;
    }
    return super.emit(event, ...args);
  }
}
