/**
 * How long an export waits for its client to take what was written ('drain') before it cuts the
 * connection, in milliseconds. A provider of its own so that a test (overrideProvider) need not
 * wait the default out.
 */
export const EXPORT_DRAIN_TIMEOUT_MS = Symbol('EXPORT_DRAIN_TIMEOUT_MS');

// 30 s: a client that reads at all, however slowly, takes one message (at most
// MAX_MESSAGE_BYTES, 1 MiB by default) and Node's small buffer far sooner; one that took
// nothing for that long has stopped reading (a tab put to sleep, a proxy that lost its client).
// Cut then, it holds a socket and one page of the transcript for 30 s, not for as long as it
// cares to stay connected.
export const DEFAULT_EXPORT_DRAIN_TIMEOUT_MS = 30_000;
