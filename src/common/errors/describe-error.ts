/**
 * The one way Scribe turns an error into a line of text for logs and admin views: the message,
 * prefixed by the error's code (errno or driver code) when the message does not already hold
 * it. Never a stack.
 */
export function describeError(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return typeof code === 'string' && !error.message.includes(code)
      ? `${code}: ${error.message}`
      : error.message;
  }
  return String(error);
}

/** The `code` of a Node or driver error (`ENOENT`, `SQLITE_BUSY`, `23505`), if it has one. */
export function errorCode(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null && 'code' in error
    ? String(error.code)
    : undefined;
}
