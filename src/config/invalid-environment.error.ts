/** Thrown when the environment is invalid; its message is the one line to print. */
export class InvalidEnvironmentError extends Error {
  override readonly name = 'InvalidEnvironmentError';
}
