// A shutdown waits for its clients, but never for ever: a client that does not answer is cut.

/** Waits for `promise`, but no longer than `ms`. */
export async function within(ms: number, promise: Promise<unknown>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([promise, new Promise((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}
