/** What an accepted append's answer promises. */
export enum AppendStatus {
  /** Committed to the database. */
  PERSISTED = 'PERSISTED',
  /** On local disk (synced) in the journal, stored in its accepted place once the database can. */
  QUEUED = 'QUEUED',
  /** Neither the database nor the local disk could take it: held in memory, best effort. */
  BUFFERED = 'BUFFERED',
}

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
