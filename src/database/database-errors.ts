/** Whether a driver error is a broken constraint (a duplicate key) rather than an outage. */
export function isConstraintViolation(error: unknown): boolean {
  const driverError = (error as { driverError?: { code?: unknown } } | null)?.driverError ?? error;
  const code = (driverError as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return false;
  // SQLite reports SQLITE_CONSTRAINT; PostgreSQL class 23 is integrity constraint violation.
  return code === 'SQLITE_CONSTRAINT' || /^23\d{3}$/.test(code);
}

/** One line for logs and the admin view, without the driver's stack. */
export function describeDatabaseError(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return typeof code === 'string' && !error.message.includes(code)
      ? `${code}: ${error.message}`
      : error.message;
  }
  return String(error);
}
