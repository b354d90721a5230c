import { encodeCursor } from '../common/pagination/cursor.js';
import { ScribeErrorCode } from '../common/errors/scribe-error-code.js';
import { type ScribeException } from '../common/errors/scribe.exception.js';
import { decodeSessionCursor } from './session-list-cursor.js';

function refusal(cursor: string): ScribeException | undefined {
  try {
    decodeSessionCursor(cursor);
    return undefined;
  } catch (error) {
    return error as ScribeException;
  }
}

describe(decodeSessionCursor.name, () => {
  it('reads the position a list cursor stands for', () => {
    expect(decodeSessionCursor(encodeCursor('1700000000000:chat-1'))).toEqual({
      updatedAt: 1700000000000,
      id: 'chat-1',
    });
  });

  it.each([
    ['no time', 'chat-1'],
    ['an id with NUL', '123:\u0000'],
    ['an id with a space', '123:a b'],
    ['an id over 128 characters', `123:${'x'.repeat(129)}`],
    ['no id', '123:'],
  ])('refuses a cursor with %s as BAD_USER_INPUT on `after`', (_name, text) => {
    const error = refusal(encodeCursor(text));
    expect(error?.code).toBe(ScribeErrorCode.BadUserInput);
    expect(error?.field).toBe('after');
  });
});
