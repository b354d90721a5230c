import { AppendStatus } from '../message/append-status.js';
import { acceptedRecord } from '../message/testing/message-record.fixture.js';
import { statusOf, type WriteOutcome } from './write-outcome.js';

type Accepted = Exclude<WriteOutcome, { kind: 'refused' }>;

describe('statusOf', () => {
  it.each<[Accepted, AppendStatus]>([
    [{ kind: 'stored' }, AppendStatus.PERSISTED],
    [{ kind: 'conflict', skipped: [acceptedRecord('s', 'x')] }, AppendStatus.PERSISTED],
    [{ kind: 'queued' }, AppendStatus.QUEUED],
    [{ kind: 'buffered' }, AppendStatus.BUFFERED],
  ])('answers %j as %s', (outcome, status) => {
    expect(statusOf(outcome)).toBe(status);
  });
});
