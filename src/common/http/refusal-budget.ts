import { isIP } from 'node:net';

/**
 * How many refused requests each source may cause: `perMinute` at once, refilled at
 * `perMinute` a minute (a token bucket). A request that is refused costs the server the work
 * of refusing it, however cheap each refusal is made; a client that sends nothing else, back
 * to back, would otherwise take as much of the event loop as it likes from everyone else. Once
 * a source's budget is spent its requests are turned away before they are read, until it has
 * earned one back. Only refusals are counted, not requests: a well-behaved client never
 * spends any, however many requests it has in flight (counting every request and giving back
 * the successful ones, as request-rate limiters do, would refuse a busy honest client).
 *
 * A request whose credentials are not known yet holds a reservation, counted as if spent:
 * otherwise a burst arriving at once would all pass before the first of it is refused. The
 * reservation is given back as soon as the credentials are accepted (so a busy honest client
 * holds next to none), or turned into a charge when they are refused.
 */
export class RefusalBudget {
  // Sources with a spent or partly spent budget, oldest first; a full one needs no entry.
  private readonly sources = new Map<string, { tokens: number; at: number }>();
  // Reservations of requests in flight, per source; bounded by the requests in flight.
  private readonly reserved = new Map<string, number>();

  constructor(
    private readonly perMinute: number,
    private readonly maxSources = 100_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** Whole seconds until `source` may be served again; 0 when it may now (or budgets are off). */
  retryAfterSeconds(source: string): number {
    if (this.perMinute === 0) return 0;
    const tokens = this.tokensOf(source) - (this.reserved.get(source) ?? 0);
    // To the millisecond first, so that float error never adds a second.
    return tokens >= 1 ? 0 : Math.ceil(Math.round(((1 - tokens) * 60_000) / this.perMinute) / 1000);
  }

  /** Spends one refusal of `source`'s budget. */
  charge(source: string): void {
    if (this.perMinute === 0) return;
    const tokens = this.tokensOf(source) - 1;
    this.sources.delete(source);
    this.sources.set(source, { tokens, at: this.now() });
    // Under a flood of distinct sources the oldest entries go first: memory stays bounded,
    // and a forgotten source only starts over with a full budget.
    if (this.sources.size > this.maxSources) {
      this.sources.delete(this.sources.keys().next().value as string);
    }
  }

  /** Counts one request of `source` in flight as spent until release(); see the class. */
  reserve(source: string): void {
    if (this.perMinute === 0) return;
    this.reserved.set(source, (this.reserved.get(source) ?? 0) + 1);
  }

  /** Gives back a reservation of `source` (charge() separately if the request was refused). */
  release(source: string): void {
    const held = this.reserved.get(source);
    if (held === undefined) return;
    if (held > 1) this.reserved.set(source, held - 1);
    else this.reserved.delete(source);
  }

  private tokensOf(source: string): number {
    const entry = this.sources.get(source);
    if (!entry) return this.perMinute;
    const tokens = entry.tokens + ((this.now() - entry.at) * this.perMinute) / 60_000;
    if (tokens < this.perMinute) return tokens;
    this.sources.delete(source);
    return this.perMinute;
  }
}

/**
 * The budget key of an address: IPv4 as is, IPv6 by its /64 network (one host is given a whole
 * /64, and would otherwise have 2^64 budgets). An IPv4 address carried in IPv6 (mapped,
 * `::ffff:0:0/96`, or through NAT64, `64:ff9b::/96`), however written, counts as itself.
 * Anything that is not an address (a forged X-Forwarded-For behind a misconfigured proxy)
 * shares one key.
 */
export function sourceKey(address: string): string {
  const family = isIP(address);
  if (family === 4) return address;
  if (family !== 6) return NOT_AN_ADDRESS;
  const groups = ipv6Groups(address);
  const prefix = groups
    .slice(0, 6)
    .map((group) => group.toString(16))
    .join(':');
  if (prefix === '0:0:0:0:0:ffff' || prefix === '64:ff9b:0:0:0:0') {
    const [high, low] = [groups[6], groups[7]];
    return [high >> 8, high & 0xff, low >> 8, low & 0xff].join('.');
  }
  return `${groups
    .slice(0, 4)
    .map((group) => group.toString(16))
    .join(':')}::/64`;
}

const NOT_AN_ADDRESS = 'not-an-address';

/** The eight 16-bit groups of a valid IPv6 address (a zone and a dotted tail allowed). */
function ipv6Groups(address: string): number[] {
  let text = address.toLowerCase().split('%')[0];
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number);
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::');
  const front = head ? head.split(':') : [];
  const back = tail ? tail.split(':') : [];
  const middle = tail === undefined ? [] : Array<string>(8 - front.length - back.length).fill('0');
  return [...front, ...middle, ...back].map((group) => Number.parseInt(group, 16));
}
