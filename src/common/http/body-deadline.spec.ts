import { jest } from '@jest/globals';
import { EventEmitter } from 'node:events';
import { type Request, type Response } from 'express';
import { bodyDeadline, bodyTimeLeft, declaresBody } from './body-deadline.js';

const RULE = { baseMs: 1000, minBytesPerSecond: 1024 };

describe(bodyTimeLeft.name, () => {
  it('allows the base, and one second more per minimum rate received', () => {
    expect(bodyTimeLeft(0, 0, RULE)).toBe(1000);
    expect(bodyTimeLeft(400, 0, RULE)).toBe(600);
    expect(bodyTimeLeft(1000, 0, RULE)).toBe(0);
    expect(bodyTimeLeft(1500, 512, RULE)).toBe(0);
    expect(bodyTimeLeft(1500, 1024, RULE)).toBe(500);
    expect(bodyTimeLeft(3000, 4096, { baseMs: 1000, minBytesPerSecond: 2048 })).toBe(0);
  });
});

describe(declaresBody.name, () => {
  const withHeaders = (headers: Record<string, string>) => ({ headers }) as unknown as Request;
  it.each([
    [{}, false],
    [{ 'content-length': '0' }, false],
    [{ 'content-length': '1' }, true],
    [{ 'transfer-encoding': 'chunked' }, true],
  ])('%j declares a body: %s', (headers, expected) => {
    expect(declaresBody(withHeaders(headers))).toBe(expected);
  });
});

class FakeRequest extends EventEmitter {
  complete = false;
  socket = { bytesRead: 500 };
  headers: Record<string, string> = { 'content-length': '100000' };
}

class FakeResponse extends EventEmitter {
  headersSent = false;
}

describe(bodyDeadline.name, () => {
  let now = 0;
  beforeEach(() => {
    jest.useFakeTimers();
    now = 0;
  });
  afterEach(() => jest.useRealTimers());

  function harness(request = new FakeRequest()) {
    const response = new FakeResponse();
    const cuts: unknown[] = [];
    let passed = false;
    const sut = bodyDeadline(
      { bodyTimeoutMs: 1000, bodyMinBytesPerSecond: 1024 },
      (_request, cutResponse) => cuts.push(cutResponse),
      () => now,
    );
    sut(request as unknown as Request, response as unknown as Response, () => (passed = true));
    const advance = (ms: number) => {
      now += ms;
      jest.advanceTimersByTime(ms);
    };
    return { request, response, cuts, advance, passed: () => passed };
  }

  it('cuts a body that stops arriving at the base', () => {
    const { cuts, advance, passed, response } = harness();
    expect(passed()).toBe(true);
    advance(999);
    expect(cuts).toEqual([]);
    advance(1);
    expect(cuts).toEqual([response]);
  });

  it('extends the deadline by what arrived since the head, and cuts once it is passed', () => {
    const { request, cuts, advance } = harness();
    advance(900);
    request.socket.bytesRead += 2048;
    advance(100);
    // 2 KiB received: two seconds more.
    expect(cuts).toEqual([]);
    advance(1999);
    expect(cuts).toEqual([]);
    advance(1);
    expect(cuts).toHaveLength(1);
  });

  it('never cuts a body that has all arrived, or a request already answered', () => {
    const complete = harness();
    complete.request.complete = true;
    complete.advance(5000);
    expect(complete.cuts).toEqual([]);
    const answered = harness();
    answered.response.headersSent = true;
    answered.advance(5000);
    expect(answered.cuts).toEqual([]);
  });

  it('stops its timer when the body ends or the response closes', () => {
    const ended = harness();
    ended.request.emit('end');
    ended.advance(5000);
    expect(ended.cuts).toEqual([]);
    const closed = harness();
    closed.response.emit('close');
    closed.advance(5000);
    expect(closed.cuts).toEqual([]);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('sets no timer for a request without a body', () => {
    const request = new FakeRequest();
    request.headers = {};
    const { passed, advance, cuts } = harness(request);
    expect(passed()).toBe(true);
    expect(jest.getTimerCount()).toBe(0);
    advance(5000);
    expect(cuts).toEqual([]);
  });
});
