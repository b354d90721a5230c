import { beat, pruneHeartbeats } from './heartbeat-sql.js';

describe('the heartbeat statements', () => {
  it.each([
    ['sqlite', '(?, ?)', '?'],
    ['postgres', '($1, $2)', '$1'],
  ] as const)('beats and prunes heartbeats on %s, keeping a week of them', (dialect, row, mark) => {
    expect(beat(dialect, 'instance', 5)).toEqual({
      sql: `INSERT INTO "scribe_heartbeat" ("instance_id", "beat_at") VALUES ${row} ON CONFLICT ("instance_id") DO UPDATE SET "beat_at" = excluded."beat_at"`,
      values: ['instance', 5],
    });
    expect(pruneHeartbeats(dialect, 1_000_000_000)).toEqual({
      sql: `DELETE FROM "scribe_heartbeat" WHERE "beat_at" < ${mark}`,
      values: [1_000_000_000 - 7 * 24 * 60 * 60 * 1000],
    });
  });
});
