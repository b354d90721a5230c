import { type Request } from 'express';
import { EventEmitter } from 'node:events';
import { ClientClosedRequestError, requestAbortSignal } from './request-abort-signal.js';

class FakeResponse extends EventEmitter {
  writableFinished = false;
  closed = false;
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
    expect(sut?.reason).toMatchObject({
      name: 'ClientClosedRequestError',
      message: 'the client closed the request',
    });
  });

  it('does not abort when the answer was sent before the connection closed', () => {
    const response = new FakeResponse();
    const sut = requestAbortSignal(requestWith(response));

    response.writableFinished = true;
    response.emit('close');

    expect(sut?.aborted).toBe(false);
  });

  it('gives every field of one request the same signal and watches the response once', () => {
    const response = new FakeResponse();
    const request = requestWith(response);

    const signals = Array.from({ length: 20 }, () => requestAbortSignal(request));

    expect(new Set(signals).size).toBe(1);
    expect(response.listenerCount('close')).toBe(1);
  });

  it('is aborted already when asked for after the client went away', () => {
    const response = new FakeResponse();
    response.closed = true;
    const request = requestWith(response);

    const sut = requestAbortSignal(request);

    expect(sut?.aborted).toBe(true);
    expect(sut?.reason).toBeInstanceOf(ClientClosedRequestError);
    expect(requestAbortSignal(request)).toBe(sut);
    expect(response.listenerCount('close')).toBe(0);
  });

  it('never aborts when asked for after the answer was sent', () => {
    const response = new FakeResponse();
    response.closed = true;
    response.writableFinished = true;
    const request = requestWith(response);

    const sut = requestAbortSignal(request);

    expect(sut?.aborted).toBe(false);
    expect(requestAbortSignal(request)).toBe(sut);
    expect(response.listenerCount('close')).toBe(0);
  });

  it('gives no signal without a response to watch', () => {
    expect(requestAbortSignal(undefined)).toBeUndefined();
  });
});
