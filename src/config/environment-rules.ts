import { type ValidationError } from 'class-validator';
import { checkTrustProxy, corsHeadersOf, corsOriginsOf } from './http-front.js';
import { InvalidEnvironmentError } from './invalid-environment.error.js';
import { BODY_ROOM_BYTES, leastResponseBytes } from './read-limit-settings.js';
import { type RunSettings } from './run-settings.js';

// The rules validateEnvironment applies around class-validator's: how a raw variable is read,
// how its first refusal is worded, and the bounds that tie one variable to another. Each refusal
// is one line naming the variable, so that a bad start says what to fix and nothing else.

/**
 * The known variables of `raw`, empty strings dropped as unset and `integers` read as numbers.
 * An integer must be plain decimal digits: Number() would take "1e3", "0x10" or " " too.
 */
export function plainVariables(
  raw: Record<string, unknown>,
  known: readonly string[],
  integers: ReadonlySet<string>,
): Record<string, unknown> {
  const plain: Record<string, unknown> = {};
  for (const key of known) {
    const value = raw[key];
    if (value === undefined || value === '') continue;
    if (integers.has(key) && typeof value === 'string') {
      if (!/^\s*\d+\s*$/.test(value)) {
        throw new InvalidEnvironmentError(`${key} must be a whole number (got "${value}")`);
      }
      plain[key] = Number(value);
    } else {
      plain[key] = value;
    }
  }
  return plain;
}

/** Throws the first of class-validator's `errors`, worded to start with the variable's name. */
export function refuseFirst(errors: readonly ValidationError[]): void {
  if (errors.length === 0) return;
  const first = errors[0];
  const reason = Object.values(first.constraints ?? {})[0] ?? 'is invalid';
  const message = reason.startsWith(first.property) ? reason : `${first.property} ${reason}`;
  throw new InvalidEnvironmentError(message);
}

/** Throws at the first bound one variable sets on another (checked in this order). */
export function checkCombinations(environment: RunSettings): void {
  if (environment.MAX_BODY_BYTES < environment.MAX_MESSAGE_BYTES + BODY_ROOM_BYTES) {
    throw new InvalidEnvironmentError(
      `MAX_BODY_BYTES must be at least MAX_MESSAGE_BYTES + ${BODY_ROOM_BYTES} bytes ` +
        `(${environment.MAX_MESSAGE_BYTES + BODY_ROOM_BYTES}); got ${environment.MAX_BODY_BYTES}`,
    );
  }
  if (environment.LISTEN_HEARTBEAT_DEADLINE_MS <= environment.LISTEN_HEARTBEAT_MS) {
    throw new InvalidEnvironmentError(
      `LISTEN_HEARTBEAT_DEADLINE_MS must be longer than LISTEN_HEARTBEAT_MS ` +
        `(${environment.LISTEN_HEARTBEAT_MS}); got ${environment.LISTEN_HEARTBEAT_DEADLINE_MS}`,
    );
  }
  const leastResponse = leastResponseBytes(environment);
  if (
    environment.MAX_RESPONSE_BYTES !== undefined &&
    environment.MAX_RESPONSE_BYTES < leastResponse
  ) {
    throw new InvalidEnvironmentError(
      `MAX_RESPONSE_BYTES must be at least MAX_BODY_BYTES + MAX_PAGE_BYTES + MAX_MESSAGE_BYTES ` +
        `(${leastResponse}), so that one mutation and one page always fit; got ${environment.MAX_RESPONSE_BYTES}`,
    );
  }
  for (const key of ['MAX_SUBSCRIPTIONS_PER_PRINCIPAL', 'MAX_CONNECTIONS_PER_SOURCE'] as const) {
    const value = environment[key];
    if (value !== undefined && value > environment.MAX_SUBSCRIPTIONS) {
      throw new InvalidEnvironmentError(
        `${key} must be at most MAX_SUBSCRIPTIONS (${environment.MAX_SUBSCRIPTIONS}); got ${value}`,
      );
    }
  }
  const consolePath = environment.ADMIN_CONSOLE_PATH.toLowerCase();
  const graphql = environment.GRAPHQL_PATH.toLowerCase();
  if (consolePath === graphql || graphql.startsWith(`${consolePath}/`)) {
    throw new InvalidEnvironmentError(
      `ADMIN_CONSOLE_PATH must not be GRAPHQL_PATH or hold it (${environment.GRAPHQL_PATH}); got ${environment.ADMIN_CONSOLE_PATH}`,
    );
  }
  checkTrustProxy(environment.TRUST_PROXY);
  corsOriginsOf(environment.CORS_ORIGINS);
  corsHeadersOf(environment.CORS_ALLOWED_HEADERS);
}
