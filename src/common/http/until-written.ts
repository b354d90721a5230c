import { type ServerResponse } from 'node:http';

/** How long an answer of `bytes` may take to be read: as long as a body that size to arrive. */
export function writeDeadlineMs(
  bytes: number,
  {
    bodyTimeoutMs,
    bodyMinBytesPerSecond,
  }: { bodyTimeoutMs: number; bodyMinBytesPerSecond: number },
): number {
  return bodyTimeoutMs + Math.ceil((1000 * bytes) / bodyMinBytesPerSecond);
}

/**
 * Calls `done` once, when `response` is written to the end or its connection is gone. A client
 * that reads slower than the deadline allows is cut: what the answer holds (a large answer's
 * slot and its bytes in Node's buffers) must not wait on a reader that never reads.
 */
export function untilWritten(response: ServerResponse, deadlineMs: number, done: () => void): void {
  if (response.writableFinished || response.destroyed) {
    done();
    return;
  }
  const timer = setTimeout(() => response.destroy(), deadlineMs);
  timer.unref();
  // 'close' comes after 'finish', and also when the connection goes before the answer is out.
  response.once('close', () => {
    clearTimeout(timer);
    done();
  });
}
