import { Inject, Injectable } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { type Express } from 'express';
import { type IncomingMessage } from 'node:http';
import { type Duplex } from 'node:stream';
import proxyaddr from 'proxy-addr';
import { AuthFailureLog } from '../common/auth/auth-failure-log.js';
import { Authenticator, type Principal } from '../common/auth/authenticator.js';
import { RefusalBudget, sourceKey } from '../common/http/refusal-budget.js';
import { ScribeConfig } from '../config/scribe-config.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { SOURCE_SLOTS } from './live.tokens.js';
import { SlotCounts } from './slot-counts.js';

/** Why an upgrade is turned away: its HTTP status, and what to say. */
export interface UpgradeRefusal {
  status: number;
  text: string;
  retryAfterSeconds?: number;
}

export type Admission =
  { kind: 'admitted'; principal: Principal } | { kind: 'refused'; code: number; reason: string };

/**
 * Who may hold a WebSocket, and how many:
 * - The HTTP endpoint's refusal budget applies here too: a source whose budget is spent is
 *   answered 429 before the upgrade; refused credentials and refused operations spend it.
 * - At most MAX_SUBSCRIPTIONS connections in all (past it, 503: the instance is full, through no
 *   fault of the caller's), and of those at most a quarter unauthenticated (the 3 s before
 *   `connection_init`), so that clients that never say who they are cannot take every slot.
 * - At most MAX_CONNECTIONS_PER_SOURCE per source address (an IPv6 /64, as the refusal budget
 *   counts it), acknowledged or not: past it, 429, and the refusal spends the source's budget,
 *   since it is the source's own doing. Behind a proxy, TRUST_PROXY must name it, or every
 *   client shares the proxy's address and its cap.
 */
@Injectable()
export class ConnectionGuard {
  private unacknowledged = 0;
  private readonly share: number;

  constructor(
    private readonly config: ScribeConfig,
    private readonly authenticator: Authenticator,
    private readonly refusals: AuthFailureLog,
    private readonly budget: RefusalBudget,
    private readonly adapterHost: HttpAdapterHost,
    @Inject(SOURCE_SLOTS) private readonly sources: SlotCounts,
    @Inject(MetricsService) private readonly metrics: Pick<MetricsService, 'refused'>,
  ) {
    this.share = Math.max(1, Math.ceil(config.subscriptions.maxSubscriptions / 4));
  }

  /** The source a connection counts against: the client's address, as Express sees it. */
  sourceOf(request: IncomingMessage): string {
    const app = this.adapterHost.httpAdapter.getInstance<Express>();
    const trust = app.get('trust proxy fn') as Parameters<typeof proxyaddr>[1];
    return sourceKey(proxyaddr(request, trust));
  }

  /**
   * Why an upgrade from `source` must be refused now; undefined when it may go ahead. A refusal
   * for the source's own connections spends its budget.
   */
  refusal(source: string, connections: number): UpgradeRefusal | undefined {
    const refusal = this.judge(source, connections);
    if (refusal) this.metrics.refused(refusal.status === 503 ? 'live_full' : 'live_rate_limited');
    return refusal;
  }

  private judge(source: string, connections: number): UpgradeRefusal | undefined {
    const wait = this.budget.retryAfterSeconds(source);
    if (wait > 0) return { status: 429, text: 'Too Many Requests', retryAfterSeconds: wait };
    if (
      connections >= this.config.subscriptions.maxSubscriptions ||
      this.unacknowledged >= this.share
    ) {
      return { status: 503, text: 'Service Unavailable' };
    }
    if (this.sources.full(source)) {
      this.budget.charge(source);
      return { status: 429, text: 'Too Many Requests' };
    }
    return undefined;
  }

  /** A connection of `source` opened; it waits for `connection_init` until `acknowledged`. */
  opened(source: string): void {
    this.sources.take(source);
    this.unacknowledged += 1;
  }

  acknowledged(): void {
    this.unacknowledged -= 1;
  }

  /** A connection opened by `opened` closed (once per connection). */
  closed(source: string, wasAcknowledged: boolean): void {
    this.sources.give(source);
    if (!wasAcknowledged) this.unacknowledged -= 1;
  }

  /** Connections held: of `source`, and waiting for `connection_init` (for tests). */
  held(source: string): { source: number; unacknowledged: number } {
    return { source: this.sources.heldBy(source), unacknowledged: this.unacknowledged };
  }

  /**
   * The connection's credentials (`authorization`), and whether a page on `origin` may use them.
   * `localAddress` is the one the socket arrived on: anonymous callers are let in on loopback.
   */
  async admit(
    source: string,
    authorization: string | undefined,
    crossOrigin: boolean,
    localAddress?: string,
  ): Promise<Admission> {
    const outcome = await this.authenticator.authenticate(authorization, localAddress);
    if (outcome.kind === 'refused') {
      this.refusals.refused(source, outcome.reason);
      this.metrics.refused('live_refused');
      this.budget.charge(source);
      return { kind: 'refused', code: 4401, reason: outcome.reason };
    }
    if (outcome.principal.anonymous && crossOrigin) {
      // No CORS guards a WebSocket: any page a browser shows could open one. A page on another
      // origin must present a token, as over HTTP.
      this.metrics.refused('live_refused');
      this.budget.charge(source);
      return {
        kind: 'refused',
        code: 4403,
        reason: 'A page on another origin must send connectionParams.authorization',
      };
    }
    return { kind: 'admitted', principal: outcome.principal };
  }

  /** An operation of `source` was refused; true once its budget is spent (close it then). */
  charge(source: string): boolean {
    this.metrics.refused('live_refused');
    this.budget.charge(source);
    return this.budget.retryAfterSeconds(source) > 0;
  }
}

/** Whether a browser page on another origin than the server's opened the connection. */
export function crossOrigin(request: IncomingMessage): boolean {
  const origin = request.headers.origin;
  if (origin === undefined) return false;
  try {
    return new URL(origin).host !== request.headers.host;
  } catch {
    return true;
  }
}

/** A close reason fits in 123 bytes. */
export function closeReason(reason: string): string {
  return Buffer.byteLength(reason) <= 123 ? reason : `${reason.slice(0, 110)}…`;
}

/** Answers an upgrade with `refusal` and closes the socket. */
export function refuseUpgrade(socket: Duplex, refusal: UpgradeRefusal): void {
  const retry =
    refusal.retryAfterSeconds === undefined ? '' : `Retry-After: ${refusal.retryAfterSeconds}\r\n`;
  socket.end(
    `HTTP/1.1 ${refusal.status} ${refusal.text}\r\n${retry}Connection: close\r\nContent-Length: 0\r\n\r\n`,
  );
}
