import { AppendStatus } from '../message/append-status.js';

export { AppendStatus };

const SEVERITY: Record<AppendStatus, number> = {
  [AppendStatus.PERSISTED]: 0,
  [AppendStatus.QUEUED]: 1,
  [AppendStatus.BUFFERED]: 2,
};

/** The status of a batch: the weakest promise among its messages. */
export function weakestStatus(statuses: readonly AppendStatus[]): AppendStatus {
  return statuses.reduce(
    (weakest, status) => (SEVERITY[status] > SEVERITY[weakest] ? status : weakest),
    AppendStatus.PERSISTED,
  );
}
