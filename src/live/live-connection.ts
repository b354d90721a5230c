import { type Principal } from '../common/auth/authenticator.js';
import { type SlotCounts } from './slot-counts.js';

/** Subscriptions one connection may hold: one client cannot take the instance's every slot. */
export const MAX_SUBSCRIPTIONS_PER_CONNECTION = 100;

/** Whether a subscription may start on a connection now. */
export type SubscriptionRoom =
  { kind: 'room' } | { kind: 'duplicate' } | { kind: 'full'; reason: string };

/** What a connection asks of its socket, and when. */
export interface ConnectionTimers {
  /** How long it may hold no subscription once acknowledged (SUBSCRIPTION_IDLE_MS). */
  idleMs: number;
  /** It held none that long: close it, so that its slot serves someone else. */
  idle: () => void;
  /** Its credentials expired: close it, since its subscriptions would outlive them. */
  expired: () => void;
}

type State = 'waiting' | 'acknowledged' | 'closed';

/**
 * One WebSocket connection's hold on the instance: its credentials once acknowledged, and its
 * running subscriptions, each holding one of its principal's slots (MAX_SUBSCRIPTIONS_PER_
 * PRINCIPAL, counted over all the principal's connections) from its start until it ends or the
 * socket closes, whichever comes first: every slot goes back exactly once. Anonymous callers
 * have no identity but their address, and count per source. While acknowledged and running
 * nothing, the connection is idle, and closed after `idleMs`.
 */
export class LiveConnection {
  /** The caller's credentials, as each of its operations presents them. */
  authorization: string | undefined;
  /** Who it authenticated as, once acknowledged: what its operations may select. */
  caller: Principal | undefined;
  private state: State = 'waiting';
  private principal = '';
  /** Ids of its subscriptions, from their start until they end. */
  private readonly running = new Set<string>();
  private idleTimer: NodeJS.Timeout | undefined;
  private expiryTimer: NodeJS.Timeout | undefined;

  constructor(
    readonly source: string,
    private readonly slots: SlotCounts,
    private readonly timers: ConnectionTimers,
  ) {}

  get acknowledged(): boolean {
    return this.state === 'acknowledged';
  }

  /** Subscriptions running. */
  get size(): number {
    return this.running.size;
  }

  /** Its credentials were accepted; false, and nothing done, when it closed meanwhile. */
  acknowledge(principal: Principal, authorization: string | undefined, now = Date.now()): boolean {
    if (this.state !== 'waiting') return false;
    this.state = 'acknowledged';
    this.authorization = authorization;
    this.caller = principal;
    this.principal = principal.anonymous ? `anonymous ${this.source}` : principal.key;
    if (principal.expiresAt !== undefined) {
      this.expiryTimer = setTimeout(this.timers.expired, Math.max(0, principal.expiresAt - now));
      this.expiryTimer.unref();
    }
    this.armIdle();
    return true;
  }

  /** Whether subscription `id` may start now (the checks of its query aside). */
  room(id: string): SubscriptionRoom {
    if (this.running.has(id)) return { kind: 'duplicate' };
    if (this.running.size >= MAX_SUBSCRIPTIONS_PER_CONNECTION) {
      return {
        kind: 'full',
        reason: `A connection may hold ${MAX_SUBSCRIPTIONS_PER_CONNECTION} subscriptions at once`,
      };
    }
    if (this.slots.full(this.principal)) {
      return {
        kind: 'full',
        reason: `These credentials hold their most subscriptions on this instance (${this.slots.limit}, MAX_SUBSCRIPTIONS_PER_PRINCIPAL); end one first`,
      };
    }
    return { kind: 'room' };
  }

  /** Subscription `id` starts and takes a slot; false, taking none, where `room` says no. */
  start(id: string): boolean {
    if (this.state !== 'acknowledged' || this.room(id).kind !== 'room') return false;
    this.slots.take(this.principal);
    this.running.add(id);
    clearTimeout(this.idleTimer);
    return true;
  }

  /** Subscription `id` ended; true when it held a slot, given back now. */
  end(id: string): boolean {
    if (!this.running.delete(id)) return false;
    this.slots.give(this.principal);
    if (this.running.size === 0 && this.state === 'acknowledged') this.armIdle();
    return true;
  }

  /**
   * The socket closed: its timers stop and its slots go back, before its subscriptions have
   * wound down (their ends then give back nothing). Only the first call does anything.
   */
  close(): void {
    if (this.state === 'closed') return;
    this.state = 'closed';
    clearTimeout(this.idleTimer);
    clearTimeout(this.expiryTimer);
    for (const id of [...this.running]) this.end(id);
  }

  private armIdle(): void {
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(this.timers.idle, this.timers.idleMs);
    this.idleTimer.unref();
  }
}
