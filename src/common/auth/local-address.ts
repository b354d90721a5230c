import { isIPv4 } from 'node:net';

/**
 * Whether a connection arrived on a loopback address of this machine: 127.0.0.0/8, `::1`, or
 * an IPv4 loopback address mapped into IPv6 (`::ffff:127.0.0.1`, how a dual-stack socket
 * reports one). Decided by the address the request arrived on (the socket's local address),
 * not by where the server was told to listen: a module cannot know where its host listens, and
 * a server on 0.0.0.0 is reached on loopback by its own machine only. Anything else, an
 * unknown address included, is not loopback.
 */
export function isLoopbackAddress(address: string | undefined): boolean {
  if (address === undefined) return false;
  const lower = address.toLowerCase();
  if (lower === '::1' || lower === '0:0:0:0:0:0:0:1') return true;
  const v4 = lower.startsWith('::ffff:') ? lower.slice('::ffff:'.length) : lower;
  return isIPv4(v4) && v4.startsWith('127.');
}

// Headers by which a proxy names the client it forwards for (RFC 7239, and the common two).
const FORWARDING_HEADERS = ['forwarded', 'x-forwarded-for', 'x-real-ip'];

/**
 * The address a request arrived on, as the anonymous rule judges it: none (so not loopback)
 * when the request names a client a proxy forwarded it for. A reverse proxy on this machine
 * (nginx in front of 127.0.0.1) makes every caller arrive on loopback, whoever sent it, with
 * or without a TRUST_PROXY setting; such a request is admitted with a token only (or with
 * ALLOW_ANONYMOUS=true).
 */
export function arrivalAddress(request: {
  headers: Record<string, string | string[] | undefined>;
  socket?: { localAddress?: string } | null;
}): string | undefined {
  if (FORWARDING_HEADERS.some((name) => request.headers[name] !== undefined)) return undefined;
  return request.socket?.localAddress;
}
