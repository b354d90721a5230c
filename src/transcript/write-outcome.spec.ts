import { AppendStatus } from '../message/append-status.js';
import { acceptedRecord } from '../message/testing/message-record.fixture.js';
import { statusOf } from './write-outcome.js';

describe('statusOf', () => {
  it.each([
    [{ kind: 'stored' } as const, AppendStatus.PERSISTED],
    [{ kind: 'conflict', skipped: [acceptedRecord('s', 'x')] } as const, AppendStatus.PERSISTED],
    [{ kind: 'queued' } as const, AppendStatus.QUEUED],
    [{ kind: 'buffered' } as const, AppendStatus.BUFFERED],
  ])('answers %j as %s', (outcome, status) => {
    expect(statusOf(outcome)).toBe(status);
  });
});
