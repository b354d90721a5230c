import { MAX_JSON_DEPTH, MAX_JSON_KEYS } from './json-body.js';
import { jsonBytes, jsonProblem, textProblem } from './storable-values.js';

const NUL = 'must not contain the NUL character (U+0000)';
const LONE_SURROGATE = 'must be valid Unicode: it holds a lone UTF-16 surrogate (U+D800 to U+DFFF)';

describe(textProblem.name, () => {
  it.each([null, undefined, '', 'plain text', 'emoji \u{1F600}'])('has none with %p', (value) => {
    expect(textProblem(value)).toBeUndefined();
  });

  it('names NUL first when a value holds both NUL and a lone surrogate', () => {
    expect(textProblem('\uD800\u0000')).toBe(NUL);
  });

  it('names a lone surrogate', () => {
    expect(textProblem('\uDFFF')).toBe(LONE_SURROGATE);
  });
});

describe(jsonProblem.name, () => {
  const nested = (depth: number): unknown => {
    let value: unknown = 'leaf';
    for (let level = 0; level < depth; level++) value = level % 2 ? [value] : { k: value };
    return value;
  };
  const withKeys = (count: number) =>
    Object.fromEntries(Array.from({ length: count }, (_, i) => [`k${i}`, i]));

  it.each([null, undefined, 0, 'text', true, [], {}])('has none with %p', (value) => {
    expect(jsonProblem(value)).toBeUndefined();
  });

  it.each([
    ['Infinity alone', Number.POSITIVE_INFINITY],
    ['-Infinity alone', Number.NEGATIVE_INFINITY],
    ['NaN alone', Number.NaN],
    ['1e400 in an object', JSON.parse('{"a":{"b":1e400}}')],
    ['-1e400 in an array', JSON.parse('[1,[2,-1e400]]')],
  ])('refuses %s: it would be stored as null', (_case, value) => {
    expect(jsonProblem(value)).toBe(
      'holds a number too large for JSON (as 1e400), which would be stored as null',
    );
  });

  it('allows the largest and smallest finite numbers', () => {
    expect(jsonProblem(Number.MAX_VALUE)).toBeUndefined();
    expect(jsonProblem([-Number.MAX_VALUE, 5e-324, 0, -0])).toBeUndefined();
  });

  it(`allows ${MAX_JSON_DEPTH} levels of objects and arrays, not one more`, () => {
    expect(jsonProblem(nested(MAX_JSON_DEPTH))).toBeUndefined();
    expect(jsonProblem(nested(MAX_JSON_DEPTH + 1))).toBe(
      `is nested more than ${MAX_JSON_DEPTH} levels deep`,
    );
  });

  it(`allows ${MAX_JSON_KEYS} keys in all, however spread, not one more`, () => {
    expect(jsonProblem(withKeys(MAX_JSON_KEYS))).toBeUndefined();
    expect(jsonProblem(withKeys(MAX_JSON_KEYS + 1))).toBe(
      `has more than ${MAX_JSON_KEYS} keys in all`,
    );
    const spread = [withKeys(MAX_JSON_KEYS / 2), { inner: withKeys(MAX_JSON_KEYS / 2 - 1) }];
    expect(jsonProblem(spread)).toBeUndefined();
    expect(jsonProblem([...spread, { one: 1 }])).toBe(`has more than ${MAX_JSON_KEYS} keys in all`);
  });

  it('stops at the first excess instead of walking the rest', () => {
    let reads = 0;
    const huge = new Proxy(withKeys(60_000), {
      get(target, key) {
        reads += 1;
        return Reflect.get(target, key);
      },
    });
    expect(jsonProblem(huge)).toBe(`has more than ${MAX_JSON_KEYS} keys in all`);
    expect(reads).toBeLessThanOrEqual(MAX_JSON_KEYS);
  });
});

describe(jsonBytes.name, () => {
  it('counts the UTF-8 bytes of the JSON text, and nothing for none', () => {
    expect(jsonBytes(undefined)).toBe(0);
    expect(jsonBytes(null)).toBe(0);
    expect(jsonBytes({ é: '🦊' })).toBe(Buffer.byteLength('{"é":"🦊"}', 'utf8'));
    expect(jsonBytes(0)).toBe(1);
  });
});
