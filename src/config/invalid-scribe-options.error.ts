/** Thrown when ScribeOptions are invalid; its message is one line naming the option's path. */
export class InvalidScribeOptionsError extends Error {
  override readonly name = 'InvalidScribeOptionsError';

  constructor(
    /** The dotted path of the option refused, e.g. `limits.maxBodyBytes`. */
    readonly path: string,
    reason: string,
  ) {
    super(`Invalid Scribe option ${path}: ${reason}`);
  }
}
