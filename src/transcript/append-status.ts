/** What happened to an accepted append: stored already, or held until the database takes it. */
export enum AppendStatus {
  PERSISTED = 'PERSISTED',
  QUEUED = 'QUEUED',
}
