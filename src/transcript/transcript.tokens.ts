// The numbers the write path's classes take, provided from ScribeConfig (transcript.providers.ts)
// so that each class names only what it uses and a spec can construct it with plain values.

/** MAX_PENDING_PER_SESSION: messages a session holds in memory before the journal takes them. */
export const MAX_PENDING_PER_SESSION = Symbol('MAX_PENDING_PER_SESSION');

/** DB_IDLE_PROBE_MS: quiet time before an idle instance probes the database; 0 never. */
export const DB_IDLE_PROBE_MS = Symbol('DB_IDLE_PROBE_MS');

/** What every write-back of a backlog runs first (the SessionEraser: see BacklogPruner). */
export const BACKLOG_PRUNER = Symbol('BACKLOG_PRUNER');
