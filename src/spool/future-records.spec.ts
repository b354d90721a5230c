import { acceptedRecord } from '../message/testing/message-record.fixture.js';
import { refuseFutureRecords } from './future-records.js';

describe(refuseFutureRecords.name, () => {
  const NOW = Date.UTC(2026, 11, 1, 12, 0, 0);
  const sut = refuseFutureRecords(60_000, () => NOW);
  const at = (acceptedAt: number) => acceptedRecord('s', 'c', { acceptedAt });

  it.each([
    ['in the past', NOW - 86_400_000],
    ['now', NOW],
    ['exactly the tolerance ahead', NOW + 60_000],
  ])('takes a record accepted %s', (_case, acceptedAt) => {
    expect(sut(at(acceptedAt))).toBeUndefined();
  });

  it('refuses one accepted further ahead, saying when and against what', () => {
    expect(sut(at(NOW + 60_001))).toBe(
      "accepted at 2026-12-01T12:01:00.001Z, more than JOURNAL_MAX_CLOCK_AHEAD_MS (60000 ms) after this clock's 2026-12-01T12:00:00.000Z",
    );
  });

  it('reads the clock at each check', () => {
    let now = NOW;
    const check = refuseFutureRecords(10, () => now);
    const record = at(NOW + 11);

    expect(check(record)).toBeDefined();
    now = NOW + 1;
    expect(check(record)).toBeUndefined();
  });
});
