import { jest } from '@jest/globals';
import { EventEmitter } from 'node:events';
import { type ServerResponse } from 'node:http';
import { untilWritten, writeDeadlineMs } from './until-written.js';

class FakeResponse extends EventEmitter {
  writableFinished = false;
  destroyed = false;
  destroy() {
    this.destroyed = true;
    this.emit('close');
  }
}

const rules = { bodyTimeoutMs: 10_000, bodyMinBytesPerSecond: 65_536 };

describe('untilWritten', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('gives a deadline as long as a body of that size may take to arrive', () => {
    expect(writeDeadlineMs(0, rules)).toBe(10_000);
    expect(writeDeadlineMs(65_536, rules)).toBe(11_000);
    expect(writeDeadlineMs(65_537, rules)).toBe(11_001);
  });

  it('is done at once for an answer written already, or a response destroyed', () => {
    for (const state of [{ writableFinished: true }, { destroyed: true }]) {
      const done = jest.fn();
      const response = Object.assign(new FakeResponse(), state);
      untilWritten(response, 1000, done);
      expect(done).toHaveBeenCalledTimes(1);
    }
  });

  it('is done once when the answer is out, and cuts no one after', () => {
    const response = new FakeResponse();
    const done = jest.fn();
    untilWritten(response as unknown as ServerResponse, 1000, done);
    expect(done).not.toHaveBeenCalled();
    response.emit('close');
    expect(done).toHaveBeenCalledTimes(1);
    jest.advanceTimersByTime(5000);
    expect(response.destroyed).toBe(false);
    expect(done).toHaveBeenCalledTimes(1);
  });

  it('cuts a reader still reading at the deadline, and is done then', () => {
    const response = new FakeResponse();
    const done = jest.fn();
    untilWritten(response as unknown as ServerResponse, 1000, done);
    jest.advanceTimersByTime(999);
    expect(response.destroyed).toBe(false);
    jest.advanceTimersByTime(1);
    expect(response.destroyed).toBe(true);
    expect(done).toHaveBeenCalledTimes(1);
  });
});
