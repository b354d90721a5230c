import { randomUUID } from 'node:crypto';
import { type IncomingMessage } from 'node:http';

// A caller's own id is kept only when it is short and plain: it goes into log lines as it is.
const CALLER_ID = /^[A-Za-z0-9._:-]{1,64}$/;

/**
 * The id of a request (or a WebSocket's upgrade): the caller's `x-request-id` when it is plain,
 * else a new UUID.
 */
export function requestIdOf(request: Pick<IncomingMessage, 'headers'>): string {
  const given = request.headers['x-request-id'];
  return typeof given === 'string' && CALLER_ID.test(given) ? given : randomUUID();
}
