import { type Request } from 'express';
import { EventEmitter } from 'node:events';
import { ClientClosedRequestError, requestAbortSignal } from './request-abort-signal.js';

class FakeResponse extends EventEmitter {
  writableFinished = false;
}

function requestWith(response: FakeResponse): Request {
  return { res: response } as unknown as Request;
}

describe(requestAbortSignal.name, () => {
  it('aborts when the connection closes before the answer was sent', () => {
    const response = new FakeResponse();
    const sut = requestAbortSignal(requestWith(response));

    response.emit('close');

    expect(sut?.aborted).toBe(true);
    expect(sut?.reason).toBeInstanceOf(ClientClosedRequestError);
  });

  it('does not abort when the answer was sent before the connection closed', () => {
    const response = new FakeResponse();
    const sut = requestAbortSignal(requestWith(response));

    response.writableFinished = true;
    response.emit('close');

    expect(sut?.aborted).toBe(false);
  });

  it('gives no signal without a response to watch', () => {
    expect(requestAbortSignal(undefined)).toBeUndefined();
  });
});
