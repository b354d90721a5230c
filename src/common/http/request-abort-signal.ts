import { type Request } from 'express';

/** Why work for a request stopped: its client went away. Nobody reads the answer. */
export class ClientClosedRequestError extends Error {
  override readonly name = 'ClientClosedRequestError';

  constructor() {
    super('the client closed the request');
  }
}

const signals = new WeakMap<Request, AbortSignal>();

/**
 * A signal that aborts when the client goes away before its answer is sent, so that work
 * done only for that client (waiting for a session load) can stop.
 */
export function requestAbortSignal(request: Request | undefined): AbortSignal | undefined {
  const response = request?.res;
  if (!request || !response) return undefined;
  // One signal per request, however many fields of one query ask for it.
  let signal = signals.get(request);
  if (!signal && response.closed) {
    // Asked for after the client went away: its 'close' has been and gone.
    signal = response.writableFinished
      ? new AbortController().signal
      : AbortSignal.abort(new ClientClosedRequestError());
    signals.set(request, signal);
  } else if (!signal) {
    const controller = new AbortController();
    response.once('close', () => {
      if (!response.writableFinished) controller.abort(new ClientClosedRequestError());
    });
    signal = controller.signal;
    signals.set(request, signal);
  }
  return signal;
}
