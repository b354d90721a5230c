import { Logger } from '@nestjs/common';
import { type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { type Socket } from 'node:net';
import { type HttpTimeoutSettings } from '../../config/scribe-config.js';
import { refusalBody, type HttpRefusalCode } from './http-refusal.js';
import { RefusalBudget, sourceKey } from './refusal-budget.js';
import { ScribeErrorCode } from '../errors/scribe-error-code.js';

/** What Node tells the server about a connection whose head it could not take. */
const ANSWERS: Record<string, [number, string, HttpRefusalCode, string]> = {
  ERR_HTTP_REQUEST_TIMEOUT: [
    408,
    'Request Timeout',
    ScribeErrorCode.RequestTimeout,
    'The request did not arrive in time (HEADERS_TIMEOUT_MS for its head)',
  ],
  HPE_HEADER_OVERFLOW: [
    431,
    'Request Header Fields Too Large',
    ScribeErrorCode.BadRequest,
    'The request head is larger than the server accepts',
  ],
};
const MALFORMED: [number, string, HttpRefusalCode, string] = [
  400,
  'Bad Request',
  ScribeErrorCode.BadRequest,
  'Malformed HTTP request',
];

/**
 * The deadlines of the HTTP server itself (set before it listens): a request's head must
 * arrive within HEADERS_TIMEOUT_MS, an idle keep-alive connection closes after
 * KEEP_ALIVE_TIMEOUT_MS, and a whole request within a backstop past the body's own deadline.
 * A connection cut at the head, or whose head is malformed, is answered with a coded JSON body
 * and charged to its address's refusal budget, unless a proxy stands in front (the address
 * would be the proxy's, shared by every client).
 */
export function applyServerDeadlines(
  server: Server,
  timeouts: HttpTimeoutSettings,
  budget: RefusalBudget | undefined,
  logger: Pick<Logger, 'debug'> = new Logger('HTTP'),
): void {
  server.headersTimeout = timeouts.headersTimeoutMs;
  server.requestTimeout = timeouts.requestTimeoutMs;
  server.keepAliveTimeout = timeouts.keepAliveTimeoutMs;
  // Node checks both deadlines on this interval (30 s by default): a tenth of the head's
  // deadline keeps the cut close to it, at the cost of one pass over the connections.
  // (An option of createServer that @types/node leaves out; read when the server listens.)
  (server as Server & { connectionsCheckingInterval: number }).connectionsCheckingInterval =
    Math.min(1000, Math.max(10, Math.floor(timeouts.headersTimeoutMs / 10)));
  // `Expect: 100-continue`: Node would invite the body before anything is checked. The request
  // goes through as any other, and credentialsFirst invites the body once it accepts them.
  server.on('checkContinue', (request: IncomingMessage, response: ServerResponse) => {
    server.emit('request', request, response);
  });
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => {
    const code = error.code ?? '';
    // A client that went away is owed nothing, and was refused nothing.
    if (code === 'ECONNRESET' || !socket.writable) return void socket.destroy();
    const [status, reason, answerCode, message] = ANSWERS[code] ?? MALFORMED;
    const address = socket.remoteAddress;
    logger.debug(
      `Cut a connection from ${address ?? 'an unknown address'}: ${answerCode} (${code})`,
    );
    if (budget && address) budget.charge(sourceKey(address));
    // Mid-answer (a request timeout while its answer is being written), nothing more is said.
    const inFlight = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (inFlight?.headersSent) return void socket.destroy();
    const body = refusalBody(answerCode, message);
    socket.end(
      `HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      // Closed once written, whether or not the client closes its side.
      () => socket.destroy(),
    );
  });
}
