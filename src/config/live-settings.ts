import { IsInt, IsOptional, Max, Min } from 'class-validator';
import { ReadLimitSettings } from './read-limit-settings.js';

/** The variables of LiveSettings that are whole numbers, read from plain decimal digits. */
export const LIVE_INTEGERS = [
  'MAX_SUBSCRIPTIONS',
  'MAX_SUBSCRIPTIONS_PER_PRINCIPAL',
  'MAX_CONNECTIONS_PER_SOURCE',
  'SUBSCRIPTION_IDLE_MS',
  'SUBSCRIPTION_BUFFER',
  'SUBSCRIPTION_BUFFER_BYTES',
  'SUBSCRIPTION_KEEPALIVE_MS',
] as const;

/** Bounds on live subscriptions (graphql-ws) and their WebSocket connections. */
export class LiveSettings extends ReadLimitSettings {
  /** Live subscriptions (graphql-ws) one instance serves at once; WebSocket connections too. */
  @IsInt()
  @Min(1)
  @Max(1_000_000)
  MAX_SUBSCRIPTIONS = 1000;

  /**
   * Live subscriptions one principal (a static token, a JWT's issuer and subject, an anonymous
   * caller's address) may hold on one instance, over all its connections. Unset: a tenth of
   * MAX_SUBSCRIPTIONS, so that one user cannot take every slot.
   */
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(1_000_000)
  MAX_SUBSCRIPTIONS_PER_PRINCIPAL?: number;

  /**
   * WebSocket connections one source address (an IPv6 /64) may hold on one instance,
   * acknowledged or not. Unset: a tenth of MAX_SUBSCRIPTIONS.
   */
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(1_000_000)
  MAX_CONNECTIONS_PER_SOURCE?: number;

  /** How long an acknowledged connection may hold no subscription before it is closed (4000). */
  @IsInt()
  @Min(100)
  @Max(3_600_000)
  SUBSCRIPTION_IDLE_MS = 20_000;

  /**
   * Messages one subscriber may fall behind by: past it (or past SUBSCRIPTION_BUFFER_BYTES)
   * its subscription ends with SLOW_CONSUMER rather than hold more memory.
   */
  @IsInt()
  @Min(1)
  @Max(1_000_000)
  SUBSCRIPTION_BUFFER = 256;

  /** Estimated bytes of the messages one subscriber may fall behind by (one always fits). */
  @IsInt()
  @Min(64 * 1024)
  @Max(1024 * 1024 * 1024)
  SUBSCRIPTION_BUFFER_BYTES = 16 * 1024 * 1024;

  /** How often the server pings each WebSocket; one that has not answered by the next is cut. */
  @IsInt()
  @Min(100)
  @Max(3_600_000)
  SUBSCRIPTION_KEEPALIVE_MS = 12_000;
}
