import { jest } from '@jest/globals';
import {
  AnswerSerialisationError,
  awaitSerialisation,
  serialiseAnswer,
} from './answer-serialiser.js';

class RecordingLogger {
  readonly lines: { message: string; stack?: string }[] = [];
  error(message: string, stack?: string): void {
    this.lines.push({ message, stack });
  }
}

describe(serialiseAnswer.name, () => {
  it('writes JSON and a newline, as Apollo does, and tells the owner once done', () => {
    const logger = new RecordingLogger();
    const sut = serialiseAnswer(logger);
    const data = { a: 1 };
    const done = jest.fn();
    awaitSerialisation(data, { requestId: 'r-1', done });

    expect(sut({ data })).toBe('{"data":{"a":1}}\n');
    expect(done).toHaveBeenCalledTimes(1);
    expect(sut({ errors: [{ message: 'x' }] })).toBe('{"errors":[{"message":"x"}]}\n');
    expect(logger.lines).toEqual([]);
  });

  it('logs a failure at ERROR with the request id and stack, and throws an error naming it', () => {
    const logger = new RecordingLogger();
    const sut = serialiseAnswer(logger);
    const data = { big: BigInt(1) };
    const done = jest.fn();
    awaitSerialisation(data, { requestId: 'r-2', done });

    let thrown: unknown;
    try {
      sut({ data });
    } catch (error) {
      thrown = error;
    }

    expect(thrown).toBeInstanceOf(AnswerSerialisationError);
    expect((thrown as AnswerSerialisationError).requestId).toBe('r-2');
    expect((thrown as Error).message).toBe(
      'The answer could not be serialised (request r-2); the server logged why',
    );
    expect(logger.lines).toHaveLength(1);
    expect(logger.lines[0].message).toMatch(/^Could not serialise the answer to request r-2: /);
    expect(logger.lines[0].message).toMatch(/BigInt/);
    expect(logger.lines[0].stack).toMatch(/TypeError/);
    expect(done).toHaveBeenCalledTimes(1);
  });

  it('still logs and throws for an answer nobody claimed', () => {
    const logger = new RecordingLogger();
    expect(() => serialiseAnswer(logger)({ data: { n: BigInt(2) } })).toThrow(
      'The answer could not be serialised; the server logged why',
    );
    expect(logger.lines[0].message).toMatch(/request \(unknown\)/);
  });
});
