import { jest } from '@jest/globals';
import { ScribeErrorCode } from '../errors/scribe-error-code.js';
import {
  MAX_BODY_CONTAINERS,
  MAX_BODY_DEPTH,
  MAX_BODY_KEYS,
  MAX_JSON_DEPTH,
  MAX_JSON_KEYS,
  jsonBodyProblem,
  queryTooLarge,
} from './json-body.js';

const TOO_MANY_KEYS = `Request body holds an object with more than ${MAX_JSON_KEYS} keys; free-form JSON may hold ${MAX_JSON_KEYS} in all`;
const TOO_DEEP = `Request body is nested more than ${MAX_BODY_DEPTH} levels deep`;

const QUERY_LIMIT = 100;
const refusalOf = (text: string) => jsonBodyProblem(Buffer.from(text, 'utf8'), QUERY_LIMIT);
const problemOf = (text: string) => {
  const refusal = refusalOf(text);
  if (refusal) expect(refusal.code).toBe(ScribeErrorCode.BadUserInput);
  return refusal?.message;
};
const objectWithKeys = (count: number) =>
  JSON.stringify(Object.fromEntries(Array.from({ length: count }, (_, i) => [`k${i}`, i])));
const nestedArrays = (levels: number) => '['.repeat(levels) + ']'.repeat(levels);

describe('jsonBodyShapeProblem', () => {
  it('leaves room for free-form JSON at its own depth limit inside a request', () => {
    expect(MAX_BODY_DEPTH).toBe(MAX_JSON_DEPTH + 10);
  });

  it(`allows an object of ${MAX_JSON_KEYS} keys, not one more`, () => {
    expect(problemOf(objectWithKeys(MAX_JSON_KEYS))).toBeUndefined();
    expect(problemOf(objectWithKeys(MAX_JSON_KEYS + 1))).toBe(TOO_MANY_KEYS);
  });

  it('counts keys per object, not across the body', () => {
    const twoObjects = `[${objectWithKeys(MAX_JSON_KEYS)},${objectWithKeys(MAX_JSON_KEYS)}]`;
    expect(problemOf(twoObjects)).toBeUndefined();
    const nested = `{"a":${objectWithKeys(MAX_JSON_KEYS)},${objectWithKeys(MAX_JSON_KEYS - 1).slice(1)}`;
    expect(problemOf(nested)).toBeUndefined();
    const oneMoreOutside = `{"a":${objectWithKeys(MAX_JSON_KEYS)},${objectWithKeys(MAX_JSON_KEYS).slice(1)}`;
    expect(problemOf(oneMoreOutside)).toBe(TOO_MANY_KEYS);
  });

  it('never counts array items as keys, however many', () => {
    expect(problemOf(JSON.stringify(Array.from({ length: 5000 }, (_, i) => i)))).toBeUndefined();
    const arrayInObject = `{"a":[${'1,'.repeat(5000)}1]}`;
    expect(problemOf(arrayInObject)).toBeUndefined();
  });

  it('counts the keys of an object that follows a closed array again from its own start', () => {
    const body = `{"list":[1,2],${objectWithKeys(MAX_JSON_KEYS - 1).slice(1)}`;
    expect(problemOf(body)).toBeUndefined();
  });

  it(`allows ${MAX_BODY_DEPTH} levels of objects and arrays, not one more`, () => {
    expect(problemOf(nestedArrays(MAX_BODY_DEPTH))).toBeUndefined();
    expect(problemOf(nestedArrays(MAX_BODY_DEPTH + 1))).toBe(TOO_DEEP);
    const objects = (levels: number) => '{"a":'.repeat(levels) + '1' + '}'.repeat(levels);
    expect(problemOf(objects(MAX_BODY_DEPTH))).toBeUndefined();
    expect(problemOf(objects(MAX_BODY_DEPTH + 1))).toBe(TOO_DEEP);
  });

  it('measures depth as what is open, not as every bracket seen', () => {
    const siblings = Array.from({ length: MAX_BODY_DEPTH * 3 }, () => '[[]]').join(',');
    expect(problemOf(`[${siblings}]`)).toBeUndefined();
  });

  it('ignores colons and brackets inside strings, escaped quotes included', () => {
    const keys = JSON.stringify(
      Object.fromEntries(
        Array.from({ length: MAX_JSON_KEYS }, (_, i) => [`k${i}`, `a:b{[ "q\\" :: ${i}`]),
      ),
    );
    expect(problemOf(keys)).toBeUndefined();
    expect(problemOf(JSON.stringify({ text: '['.repeat(MAX_BODY_DEPTH + 5) }))).toBeUndefined();
  });

  it('sees a quote after an even run of backslashes as the end of the string', () => {
    // "a\\" ends after the two backslashes; the colons that follow are real keys.
    const body = `{"s":"a\\\\",${objectWithKeys(MAX_JSON_KEYS).slice(1)}`;
    expect(problemOf(body)).toBe(TOO_MANY_KEYS);
  });

  it('checks multi-byte text as bytes without mistaking it for structure', () => {
    const body = JSON.stringify({ text: '€:{'.repeat(1000), emoji: '😀[' });
    expect(problemOf(body)).toBeUndefined();
  });

  it('leaves a body whose string never closes to the parser', () => {
    expect(problemOf(`{"a":"${':'.repeat(MAX_JSON_KEYS + 5)}`)).toBeUndefined();
    expect(problemOf(`{"a":"x\\"`)).toBeUndefined();
  });

  it('stops at the first excess without reading on', () => {
    const bytes = Buffer.from(objectWithKeys(MAX_JSON_KEYS + 2));
    const read = jest.spyOn(bytes, 'indexOf');
    expect(jsonBodyProblem(bytes, QUERY_LIMIT)?.message).toBe(TOO_MANY_KEYS);
    // One search per key name and per string value before the refusal, none after.
    expect(read.mock.calls.length).toBe(MAX_JSON_KEYS + 1);
  });
});

describe('jsonBodyProblem: the query document', () => {
  const TOO_LARGE = { code: ScribeErrorCode.PayloadTooLarge, message: queryTooLarge(QUERY_LIMIT) };
  const withQuery = (rawQueryText: string) => `{"query":"${rawQueryText}"}`;

  it('names the limit and says what to do instead', () => {
    expect(queryTooLarge(65536)).toBe(
      'Query document exceeds 65536 bytes (MAX_QUERY_BYTES). Send message data as variables.',
    );
  });

  it(`refuses a query over the limit, not one at it`, () => {
    expect(refusalOf(withQuery('q'.repeat(QUERY_LIMIT)))).toBeUndefined();
    expect(refusalOf(withQuery('q'.repeat(QUERY_LIMIT + 1)))).toEqual(TOO_LARGE);
  });

  it('finds the query wherever it stands among the top-level keys', () => {
    const body = `{"operationName":null,"variables":{"a":[1,{"b":"c"}]},"query":"${'q'.repeat(QUERY_LIMIT + 1)}"}`;
    expect(refusalOf(body)).toEqual(TOO_LARGE);
    const spaced = `{ "query" : "${'q'.repeat(QUERY_LIMIT + 1)}" }`;
    expect(refusalOf(spaced)).toEqual(TOO_LARGE);
  });

  it('measures only the top-level query, never other strings', () => {
    const long = 'q'.repeat(QUERY_LIMIT * 2);
    expect(refusalOf(`{"query":"{ a }","variables":{"query":"${long}"}}`)).toBeUndefined();
    expect(refusalOf(`{"query":"{ a }","extensions":"${long}"}`)).toBeUndefined();
    expect(refusalOf(`{"queryX":"${long}"}`)).toBeUndefined();
    expect(refusalOf(`{"quer":"${long}"}`)).toBeUndefined();
    expect(refusalOf(`["query","${long}"]`)).toBeUndefined();
    expect(refusalOf(`{"variables":"query","x":"${long}"}`)).toBeUndefined();
  });

  it('measures nothing after a query that is not a string', () => {
    const long = 'k'.repeat(QUERY_LIMIT * 2);
    expect(refusalOf(`{"query":1,"${long}":2}`)).toBeUndefined();
    expect(refusalOf(`{"query":{"x":1},"${long}":2}`)).toBeUndefined();
  });

  it('counts escapes as the bytes they decode to, at the least', () => {
    // `\n` is one byte: a query of escapes decodes to half its raw length.
    expect(refusalOf(withQuery('\\n'.repeat(QUERY_LIMIT)))).toBeUndefined();
    expect(refusalOf(withQuery('\\n'.repeat(QUERY_LIMIT + 1)))).toEqual(TOO_LARGE);
    // \u0041 is one byte, \u00e9 two, \u20ac three, each half of a surrogate pair two.
    expect(refusalOf(withQuery('\\u0041'.repeat(QUERY_LIMIT)))).toBeUndefined();
    expect(refusalOf(withQuery('\\u0041'.repeat(QUERY_LIMIT + 1)))).toEqual(TOO_LARGE);
    expect(refusalOf(withQuery('\\u00e9'.repeat(QUERY_LIMIT / 2)))).toBeUndefined();
    expect(refusalOf(withQuery(`${'\\u00e9'.repeat(QUERY_LIMIT / 2)}q`))).toEqual(TOO_LARGE);
    expect(refusalOf(withQuery(`${'\\u07ff'.repeat(QUERY_LIMIT / 2)}q`))).toEqual(TOO_LARGE);
    expect(refusalOf(withQuery(`${'\\u0800'.repeat(33)}q`))).toBeUndefined();
    expect(refusalOf(withQuery(`${'\\u20ac'.repeat(33)}qq`))).toEqual(TOO_LARGE);
    expect(refusalOf(withQuery('\\ud83d\\ude00'.repeat(QUERY_LIMIT / 4)))).toBeUndefined();
    expect(refusalOf(withQuery(`${'\\ud83d\\ude00'.repeat(QUERY_LIMIT / 4)}q`))).toEqual(TOO_LARGE);
    // A lone half decodes to U+FFFD, three bytes: left to the exact check after parsing.
    expect(refusalOf(withQuery('\\ud800'.repeat(QUERY_LIMIT / 2)))).toBeUndefined();
    expect(refusalOf(withQuery('\\udfff'.repeat(QUERY_LIMIT / 2)))).toBeUndefined();
    expect(refusalOf(withQuery(`${'\\ue000'.repeat(33)}qq`))).toEqual(TOO_LARGE);
  });

  it('agrees with the decoded length of the escapes JSON.stringify writes', () => {
    const query = `{ a(s: "${'\u0000\t"\\é€😀'.repeat(5)}") }`;
    const raw = JSON.stringify({ query });
    const decoded = Buffer.byteLength(query, 'utf8');
    expect(jsonBodyProblem(Buffer.from(raw), decoded)).toBeUndefined();
    expect(jsonBodyProblem(Buffer.from(raw), decoded - 1)?.code).toBe(
      ScribeErrorCode.PayloadTooLarge,
    );
  });

  it('counts only the escapes of the query itself, not those of strings after it', () => {
    const body = `{"query":"${'q'.repeat(QUERY_LIMIT + 1)}","x":"${'\\n'.repeat(50)}"}`;
    expect(refusalOf(body)).toEqual(TOO_LARGE);
  });

  it('measures no query string that is short in its raw form: one search per string', () => {
    const pairs = Array.from({ length: 500 }, () => '"query":"\\n"').join(',');
    const bytes = Buffer.from(`{${pairs},"x":"${'y'.repeat(QUERY_LIMIT * 3)}"}`);
    const search = jest.spyOn(bytes, 'indexOf');
    expect(jsonBodyProblem(bytes, QUERY_LIMIT)).toBeUndefined();
    expect(search.mock.calls.length).toBe(1002);
  });
});

describe('jsonBodyProblem: what follows the top-level value', () => {
  it('stops where the top-level value ends: the parser refuses anything after it', () => {
    const long = 'q'.repeat(QUERY_LIMIT * 2);
    expect(refusalOf(`{"a":1}{"query":"${long}"}`)).toBeUndefined();
    expect(refusalOf(`{"a":1} ${objectWithKeys(MAX_JSON_KEYS + 1)}`)).toBeUndefined();
    expect(refusalOf(`[1]${nestedArrays(MAX_BODY_DEPTH + 1)}`)).toBeUndefined();
  });

  it('stops at a closing bracket that opens nothing', () => {
    const long = 'q'.repeat(QUERY_LIMIT * 2);
    expect(refusalOf(`}{"query":"${long}"}`)).toBeUndefined();
    expect(refusalOf(`]${objectWithKeys(MAX_JSON_KEYS + 1)}`)).toBeUndefined();
  });

  it('still counts inside nested values that close', () => {
    const inner = `{"a":{"b":[1,{"c":2}]},${objectWithKeys(MAX_JSON_KEYS).slice(1)}`;
    expect(refusalOf(inner)?.message).toBe(TOO_MANY_KEYS);
  });
});

describe('jsonBodyProblem: the body as a whole', () => {
  const containers = (count: number) =>
    `{"x":[${Array<string>(count - 2)
      .fill('[]')
      .join(',')}]}`;

  it(`allows ${MAX_BODY_CONTAINERS} objects and arrays in all, not one more`, () => {
    expect(problemOf(containers(MAX_BODY_CONTAINERS))).toBeUndefined();
    expect(problemOf(containers(MAX_BODY_CONTAINERS + 1))).toBe(
      `Request body holds more than ${MAX_BODY_CONTAINERS} objects and arrays`,
    );
    const empties = `[${Array<string>(MAX_BODY_CONTAINERS).fill('{}').join(',')}]`;
    expect(problemOf(empties)).toBe(
      `Request body holds more than ${MAX_BODY_CONTAINERS} objects and arrays`,
    );
  });

  it(`allows ${MAX_BODY_KEYS} keys in all, not one more`, () => {
    const perObject = 1000;
    const withKeys = (total: number) => {
      const objects: string[] = [];
      for (let left = total; left > 0; left -= perObject) {
        objects.push(objectWithKeys(Math.min(perObject, left)));
      }
      return `[${objects.join(',')}]`;
    };
    expect(problemOf(withKeys(MAX_BODY_KEYS))).toBeUndefined();
    expect(problemOf(withKeys(MAX_BODY_KEYS + 1))).toBe(
      `Request body holds more than ${MAX_BODY_KEYS} keys in all`,
    );
  });

  it('has room for a full batch of messages with free-form JSON at its bounds', () => {
    expect(MAX_BODY_KEYS).toBeGreaterThanOrEqual(1000 * (8 + 2 * MAX_JSON_KEYS));
    expect(MAX_BODY_CONTAINERS).toBeGreaterThanOrEqual(1000 * 100);
  });
});
