// Two SlotCounts with different limits: each is named by what it counts.

/** Connections per source address, at most MAX_CONNECTIONS_PER_SOURCE each (ConnectionGuard). */
export const SOURCE_SLOTS = Symbol('SOURCE_SLOTS');

/** Running subscriptions per principal, at most MAX_SUBSCRIPTIONS_PER_PRINCIPAL each. */
export const PRINCIPAL_SLOTS = Symbol('PRINCIPAL_SLOTS');
