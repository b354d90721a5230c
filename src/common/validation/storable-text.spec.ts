import { textProblem } from './storable-text.js';

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
