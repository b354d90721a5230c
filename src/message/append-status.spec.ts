import { AppendStatus, weakestStatus } from './append-status.js';

const { PERSISTED, QUEUED, BUFFERED } = AppendStatus;

describe(weakestStatus.name, () => {
  it('is PERSISTED for a batch with nothing weaker, and for an empty one', () => {
    expect(weakestStatus([PERSISTED, PERSISTED])).toBe(PERSISTED);
    expect(weakestStatus([])).toBe(PERSISTED);
  });

  it.each([
    [[PERSISTED, QUEUED, PERSISTED], QUEUED],
    [[QUEUED, BUFFERED], BUFFERED],
    [[BUFFERED, QUEUED], BUFFERED],
    [[BUFFERED, PERSISTED], BUFFERED],
  ])('is the weakest promise of %p: %s', (statuses, weakest) => {
    expect(weakestStatus(statuses)).toBe(weakest);
  });
});
