import { isIP } from 'node:net';
import { InvalidEnvironmentError } from './invalid-environment.error.js';

// What stands in front of Scribe's HTTP server: the proxies it trusts, and the browser origins
// it answers. Both are checked at start, with one line naming the variable.

const TRUST_PROXY_RULE =
  'TRUST_PROXY must be a number of proxies or a comma-separated list of addresses, subnets or loopback, linklocal, uniquelocal';

/** Throws InvalidEnvironmentError unless TRUST_PROXY is unset, a number, or a list of entries. */
export function checkTrustProxy(proxy: string | undefined): void {
  if (
    proxy &&
    !/^\d+$/.test(proxy) &&
    !proxy.split(',').every((entry) => isProxyEntry(entry.trim()))
  ) {
    throw new InvalidEnvironmentError(TRUST_PROXY_RULE);
  }
}

/**
 * The origins CORS_ORIGINS lists: each `scheme://host[:port]` exactly as a browser sends it in
 * `Origin` (no path, no trailing slash, no wildcard); throws InvalidEnvironmentError otherwise.
 */
export function corsOriginsOf(value: string | undefined): string[] {
  if (!value?.trim()) return [];
  return value.split(',').map((entry) => {
    const origin = entry.trim();
    let parsed: URL | undefined;
    try {
      parsed = new URL(origin);
    } catch {
      parsed = undefined;
    }
    if (!parsed || !['http:', 'https:'].includes(parsed.protocol) || parsed.origin !== origin) {
      throw new InvalidEnvironmentError(
        `CORS_ORIGINS must list origins such as https://chat.example.com (scheme, host and port only, comma-separated); got ${JSON.stringify(origin)}`,
      );
    }
    return origin;
  });
}

/**
 * The header names CORS_ALLOWED_HEADERS lists, lower-cased: each an HTTP token (RFC 9110's
 * `tchar`s), comma-separated; throws InvalidEnvironmentError otherwise.
 */
export function corsHeadersOf(value: string | undefined): string[] {
  if (!value?.trim()) return [];
  return value.split(',').map((entry) => {
    const name = entry.trim();
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) {
      throw new InvalidEnvironmentError(
        `CORS_ALLOWED_HEADERS must list header names such as x-trace-id (comma-separated); got ${JSON.stringify(name)}`,
      );
    }
    const lower = name.toLowerCase();
    if (lower.includes('*') || isForbiddenHeader(lower)) {
      throw new InvalidEnvironmentError(
        `CORS_ALLOWED_HEADERS must name headers a page may send: not * (any header) nor one the browser sets itself; got ${JSON.stringify(name)}`,
      );
    }
    return lower;
  });
}

// What the Fetch standard keeps from pages (its forbidden request-header names): listing one
// allows nothing, and `*` would allow every header a page could send.
const FORBIDDEN_HEADERS = new Set([
  'accept-charset',
  'accept-encoding',
  'access-control-request-headers',
  'access-control-request-method',
  'connection',
  'content-length',
  'cookie',
  'cookie2',
  'date',
  'dnt',
  'expect',
  'host',
  'keep-alive',
  'origin',
  'referer',
  'set-cookie',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'via',
]);

function isForbiddenHeader(name: string): boolean {
  return (
    FORBIDDEN_HEADERS.has(name) ||
    name.startsWith('proxy-') ||
    name.startsWith('sec-') ||
    name.startsWith('access-control-')
  );
}

/** An address, a subnet (address/prefix) or one of Express's names, as `trust proxy` takes. */
function isProxyEntry(entry: string): boolean {
  if (['loopback', 'linklocal', 'uniquelocal'].includes(entry)) return true;
  const [address, prefix, more] = entry.split('/');
  const family = isIP(address);
  if (family === 0 || more !== undefined) return false;
  if (prefix === undefined) return true;
  return /^\d+$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128);
}
