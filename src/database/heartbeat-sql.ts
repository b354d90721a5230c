import { rowsOf, type Dialect, type Statement } from './sql-dialect.js';

// The health probe's heartbeat rows: a commit that goes through, apart from any message write.

// Heartbeat rows of instances gone for this long are removed at start.
const HEARTBEAT_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;

/** Removes the heartbeat rows of instances long gone. */
export function pruneHeartbeats(dialect: Dialect, now: number): Statement {
  return {
    sql: `DELETE FROM "scribe_heartbeat" WHERE "beat_at" < ${dialect === 'postgres' ? '$1' : '?'}`,
    values: [now - HEARTBEAT_RETENTION_MS],
  };
}

/** This instance's heartbeat row, written by the health probe to prove a commit goes through. */
export function beat(dialect: Dialect, instanceId: string, at: number): Statement {
  return {
    sql:
      `INSERT INTO "scribe_heartbeat" ("instance_id", "beat_at") VALUES ${rowsOf(dialect, 1, 2, (marks) => `(${marks})`)} ` +
      `ON CONFLICT ("instance_id") DO UPDATE SET "beat_at" = excluded."beat_at"`,
    values: [instanceId, at],
  };
}
