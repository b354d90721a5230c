/** What an accepted append's answer promises. */
export enum AppendStatus {
  /** Committed to the database. */
  PERSISTED = 'PERSISTED',
  /** On local disk (synced) in the journal, stored in its accepted place once the database can. */
  QUEUED = 'QUEUED',
  /** Neither the database nor the local disk could take it: held in memory, best effort. */
  BUFFERED = 'BUFFERED',
}
