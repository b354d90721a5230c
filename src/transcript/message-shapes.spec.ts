import { runInNewContext } from 'node:vm';
import { ScribeErrorCode } from '../common/errors/scribe-error-code.js';
import { ScribeException } from '../common/errors/scribe.exception.js';
import { MAX_JSON_DEPTH, MAX_JSON_KEYS } from '../common/validation/json-body.js';
import { checkNewMessages } from './input-rules.js';
import { MessageInput } from './dto/message.input.js';
import { plainMessagesOf } from './message-shapes.js';

const BATCH = 'input.messages';
const fieldOf = (index: number) => `${BATCH}.${index}`;

/** What append() checks of a host's messages, in its order: the shapes, then the input rules. */
function hostAppend(messages: unknown, sessionId: unknown = 's-1') {
  const inputs = plainMessagesOf(sessionId, messages, fieldOf, BATCH, 1_000_000);
  checkNewMessages(inputs, 1_000_000, fieldOf);
  return inputs;
}

function refusal(messages: unknown): { field: string; message: string } {
  try {
    hostAppend(messages);
  } catch (error) {
    // A clear ScribeError, never a raw TypeError.
    expect(error).toBeInstanceOf(ScribeException);
    const refused = error as ScribeException;
    expect(refused.code).toBe(ScribeErrorCode.BadUserInput);
    expect(refused.message).not.toContain('\n');
    return { field: refused.field ?? '', message: refused.message };
  }
  throw new Error('accepted');
}

const withMetadata = (metadata: unknown) => [{ role: 'USER', content: 'hi', metadata }];

function nested(depth: number): unknown {
  let value: unknown = 1;
  for (let level = 0; level < depth; level++) value = { a: value };
  return value;
}

describe(plainMessagesOf.name, () => {
  describe('copying free-form JSON no further than MAX_MESSAGE_BYTES', () => {
    const copyRefusal = (metadata: unknown, maxBytes: number) => {
      try {
        plainMessagesOf('s-1', withMetadata(metadata), fieldOf, BATCH, maxBytes);
        return undefined;
      } catch (error) {
        expect(error).toBeInstanceOf(ScribeException);
        return (error as ScribeException).message;
      }
    };

    it('refuses a long list once its JSON is sure to be over, reading no more of it', () => {
      let reads = 0;
      const list = new Proxy(new Array<number>(1_000_000).fill(1), {
        get(target, key, receiver) {
          if (typeof key === 'string' && /^\d+$/.test(key)) reads += 1;
          return Reflect.get(target, key, receiver) as unknown;
        },
      });
      expect(copyRefusal({ l: list }, 100)).toBe(
        'input.messages.0.metadata: is more than 100 bytes as JSON (MAX_MESSAGE_BYTES)',
      );
      // [1,1,…] takes two bytes an item: about fifty of them were read, not a million.
      expect(reads).toBeLessThan(100);
    });

    it('counts no more than the JSON takes: exactly the budget is copied', () => {
      // {"t":"…"} is 8 bytes around the text: 92 of text make exactly 100.
      expect(copyRefusal({ t: 'x'.repeat(92) }, 100)).toBeUndefined();
      expect(copyRefusal({ t: 'x'.repeat(93) }, 100)).toMatch(/is more than 100 bytes as JSON/);
      const mixed = [1, 2, 3, null, true, false, [], { a: [] }, 'ab', '😀'];
      expect(copyRefusal(mixed, Buffer.byteLength(JSON.stringify(mixed)))).toBeUndefined();
    });
  });

  it('refuses a message that is no plain object: its fields on a prototype would be dropped', () => {
    class Message {
      role = 'USER';
      content = 'hi';
      get clientMessageId() {
        return 'c-1';
      }
    }
    expect(refusal([new Message()])).toEqual({
      field: 'input.messages.0',
      message: 'input.messages.0: must be a plain object (as JSON.parse gives)',
    });
    expect(refusal([new Date(0)]).field).toBe('input.messages.0');
    // Of another realm, or of no prototype, a message is plain.
    const foreign = runInNewContext("({ role: 'USER', content: 'hi' })") as object;
    const bare = Object.assign(Object.create(null) as object, { role: 'USER', content: 'hi' });
    const input = Object.assign(new MessageInput(), { role: 'USER', content: 'hi' });
    expect(hostAppend([foreign, bare, input])).toHaveLength(3);
  });

  it('refuses a field that is not enumerable, which would be read as absent', () => {
    const message = Object.defineProperty({ role: 'USER', content: 'hi' }, 'clientMessageId', {
      value: 'c-1',
      enumerable: false,
    });
    expect(refusal([message])).toEqual({
      field: 'input.messages.0.clientMessageId',
      message: 'input.messages.0.clientMessageId: must be an enumerable property',
    });
  });

  it.each(['role', 'content', 'clientMessageId', 'toolName', 'toolCallId'])(
    'refuses a boxed String (or any object) as %s: stored, it would be "[object Object]"',
    (key) => {
      const message = { role: 'USER', content: 'hi', [key]: new String('USER') };
      expect(refusal([message])).toEqual({
        field: `input.messages.0.${key}`,
        message: `input.messages.0.${key}: must be a string, not an object`,
      });
      expect(refusal([{ role: 'USER', content: 'hi', [key]: () => 'x' }]).field).toBe(
        `input.messages.0.${key}`,
      );
    },
  );

  it('copies plain JSON as given', () => {
    const metadata = { n: 1, s: 'x', list: [1, null, { b: true }], none: null };
    const [input] = hostAppend(withMetadata(metadata));

    expect(input.metadata).toEqual(metadata);
    expect(input.metadata).not.toBe(metadata);
  });

  it.each([
    ['a BigInt', { n: 1n }, 'input.messages.0.metadata.n', 'is a bigint, which JSON cannot carry'],
    [
      'a function',
      { f: () => 1 },
      'input.messages.0.metadata.f',
      'is a function, which JSON cannot carry',
    ],
    [
      'a symbol value',
      { s: Symbol('s') },
      'input.messages.0.metadata.s',
      'is a symbol, which JSON cannot carry',
    ],
    ['NaN', { n: NaN }, 'input.messages.0.metadata.n', 'is NaN, which JSON cannot carry'],
    ['Infinity', [Infinity], 'input.messages.0.metadata.0', 'is Infinity, which JSON cannot carry'],
    [
      'undefined in a list',
      [1, undefined],
      'input.messages.0.metadata.1',
      'is undefined, which JSON cannot carry',
    ],
    [
      'a deep BigInt',
      { a: [{ b: 2n }] },
      'input.messages.0.metadata.a.0.b',
      'is a bigint, which JSON cannot carry',
    ],
    [
      'a symbol key',
      { [Symbol('k')]: 1 },
      'input.messages.0.metadata',
      'has a symbol key, which JSON cannot carry',
    ],
    [
      'a Date',
      { at: new Date(0) },
      'input.messages.0.metadata.at',
      'is a Date, not a plain object: send what JSON.parse gives (a Date as a string)',
    ],
    [
      'a Map',
      new Map([['k', 1]]),
      'input.messages.0.metadata',
      'is a Map, not a plain object: send what JSON.parse gives (a Date as a string)',
    ],
    [
      'a class instance',
      {
        x: new (class Point {
          x = 1;
        })(),
      },
      'input.messages.0.metadata.x',
      'is a Point, not a plain object: send what JSON.parse gives (a Date as a string)',
    ],
  ])('refuses %s in metadata, naming its path', (_, metadata, field, reason) => {
    expect(refusal(withMetadata(metadata))).toEqual({ field, message: `${field}: ${reason}` });
  });

  it('refuses a cycle, naming where it closes', () => {
    const cyclic: Record<string, unknown> = { a: {} };
    (cyclic.a as Record<string, unknown>).back = cyclic;

    expect(refusal(withMetadata(cyclic)).message).toBe(
      'input.messages.0.metadata.a.back: holds itself (a cycle), which JSON cannot carry',
    );
  });

  it('takes one object twice where it is no cycle, as JSON would', () => {
    const shared = { k: 1 };
    const [input] = hostAppend(withMetadata({ a: shared, b: [shared] }));

    expect(input.metadata).toEqual({ a: { k: 1 }, b: [{ k: 1 }] });
  });

  it('skips an undefined property, as JSON does', () => {
    expect(hostAppend(withMetadata({ a: undefined, b: 1 }))[0].metadata).toEqual({ b: 1 });
  });

  it('refuses a throwing getter, in metadata or on the message, naming it', () => {
    const metadata = Object.defineProperty({}, 'n', {
      enumerable: true,
      get: () => {
        throw new TypeError('no n for you');
      },
    });
    expect(refusal(withMetadata(metadata))).toEqual({
      field: 'input.messages.0.metadata.n',
      message: 'input.messages.0.metadata.n: could not be read: no n for you',
    });
    const message = Object.defineProperty({ role: 'USER' }, 'content', {
      enumerable: true,
      get: () => {
        throw new Error('gone');
      },
    });
    expect(refusal([message]).message).toBe('input.messages.0.content: could not be read: gone');
  });

  it('reads a getter once: what is checked is what is stored', () => {
    let reads = 0;
    const metadata = Object.defineProperty({}, 'n', {
      enumerable: true,
      get: () => (++reads === 1 ? 'first' : 2n),
    });
    const [input] = hostAppend(withMetadata(metadata));

    expect(input.metadata).toEqual({ n: 'first' });
    expect(reads).toBe(1);
  });

  it('refuses a Proxy whose traps throw, as metadata, a message or the list', () => {
    const hostile = new Proxy(
      {},
      {
        ownKeys: () => {
          throw new Error('trap');
        },
        getPrototypeOf: () => {
          throw new Error('trap');
        },
      },
    );
    expect(refusal(withMetadata(hostile)).message).toBe(
      'input.messages.0.metadata: could not be read: trap',
    );
    expect(refusal([hostile]).message).toBe('input.messages.0: could not be read: trap');
    const { proxy, revoke } = Proxy.revocable([], {});
    revoke();
    expect(refusal(proxy).field).toBe('input.messages');
  });

  it('refuses a throwing thing that throws when its message is read too', () => {
    const metadata = Object.defineProperty({}, 'n', {
      enumerable: true,
      get: () => {
        // eslint-disable-next-line @typescript-eslint/only-throw-error
        throw {
          get message(): string {
            throw new Error('again');
          },
        };
      },
    });
    expect(refusal(withMetadata(metadata)).message).toBe(
      'input.messages.0.metadata.n: could not be read: it threw',
    );
  });

  it('keeps a `__proto__` key of metadata as a key, as JSON.parse does', () => {
    const metadata = JSON.parse('{"__proto__":{"x":1},"y":2}') as object;
    const [input] = hostAppend(withMetadata(metadata));
    const copied = input.metadata as Record<string, unknown>;

    expect(Object.getPrototypeOf(copied)).toBe(Object.prototype);
    expect(Object.keys(copied)).toEqual(['__proto__', 'y']);
    expect(JSON.stringify(copied)).toBe('{"__proto__":{"x":1},"y":2}');
  });

  it('refuses a `__proto__` key of a message by its name, not `undefined`', () => {
    const message = JSON.parse('{"role":"USER","content":"hi","__proto__":{"x":1}}') as object;

    expect(refusal([message])).toEqual({
      field: 'input.messages.0.__proto__',
      message: 'input.messages.0.__proto__: property __proto__ should not exist',
    });
  });

  it('refuses a symbol key on a message', () => {
    expect(refusal([{ role: 'USER', content: 'hi', [Symbol('x')]: 1 }]).message).toBe(
      'input.messages.0: has a symbol key, which is no field of a message',
    );
  });

  it('takes plain objects of another realm', () => {
    const foreign = runInNewContext('({ a: [1, { b: "c" }] })') as object;

    expect(hostAppend(withMetadata(foreign))[0].metadata).toEqual({ a: [1, { b: 'c' }] });
  });

  // The bounds are GraphQL's (jsonProblem), worded alike, naming the field.
  it(`refuses metadata nested past ${MAX_JSON_DEPTH} levels as GraphQL does`, () => {
    expect(hostAppend(withMetadata(nested(MAX_JSON_DEPTH - 1)))).toHaveLength(1);
    expect(refusal(withMetadata(nested(MAX_JSON_DEPTH + 5)))).toEqual({
      field: 'input.messages.0.metadata',
      message: `input.messages.0.metadata: is nested more than ${MAX_JSON_DEPTH} levels deep`,
    });
    // Deep past any stack: refused at the bound, never walked down.
    expect(refusal(withMetadata(nested(100_000))).field).toBe('input.messages.0.metadata');
  });

  it(`refuses metadata of more than ${MAX_JSON_KEYS} keys as GraphQL does`, () => {
    const wide = Object.fromEntries(
      Array.from({ length: MAX_JSON_KEYS + 1 }, (_, i) => [`k${i}`, i]),
    );
    expect(refusal(withMetadata(wide)).message).toBe(
      `input.messages.0.metadata: has more than ${MAX_JSON_KEYS} keys in all`,
    );
  });

  // Over GraphQL, JSON text carries both, escaped, and they are stored and read back as sent
  // (the JSON columns are text of JSON.stringify): the host's path takes them alike, in keys as
  // in values. A text field (content, ids) refuses them, on both paths.
  it('takes NUL and lone surrogates in metadata keys and values, as GraphQL does', () => {
    const metadata = { '\ud800': 'a\u0000', 'b\u0000': '\udfff' };
    const [input] = hostAppend(withMetadata(metadata));

    expect(JSON.parse(JSON.stringify(input.metadata))).toEqual(metadata);
    expect(refusal([{ role: 'USER', content: '\ud800' }]).field).toBe('input.messages.0.content');
  });

  it('refuses toolCalls alike', () => {
    expect(refusal([{ role: 'ASSISTANT', content: '', toolCalls: [{ id: 1n }] }]).message).toBe(
      'input.messages.0.toolCalls.0.id: is a bigint, which JSON cannot carry',
    );
  });

  it('refuses what is no list of messages, and no message', () => {
    expect(refusal('x').message).toBe('input.messages: must be a list');
    expect(refusal([null]).message).toBe('input.messages.0: must be an object');
    expect(refusal([[]]).message).toBe('input.messages.0: must be an object');
  });
});
