/** A record the journal owes, in a file that cannot be read now (see BlockedFiles). */
export class RecordUnreadableError extends Error {
  override readonly name = 'RecordUnreadableError';

  constructor(
    readonly messageId: string,
    readonly reason: string,
  ) {
    super(`journaled message ${messageId} cannot be read now: ${reason}`);
  }
}
