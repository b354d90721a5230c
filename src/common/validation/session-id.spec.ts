import { SESSION_ID_PATTERN, idPrefixRange } from './session-id.js';

describe('idPrefixRange', () => {
  it('bounds the ids that start with a prefix by the prefix and its last character moved up', () => {
    expect(idPrefixRange('u1-')).toEqual({ from: 'u1-', to: 'u1.' });
    expect(idPrefixRange('a')).toEqual({ from: 'a', to: 'b' });
    expect(idPrefixRange('user:9')).toEqual({ from: 'user:9', to: 'user::' });
  });

  it('holds exactly the ids that start with the prefix, in byte order', () => {
    const alphabet = 'Az09._:-';
    const ids = [...alphabet].flatMap((a) => [a, ...[...alphabet].map((b) => a + b)]);
    for (const prefix of ['z', '0', '-', '.', ':', 'A_', 'z.']) {
      const { from, to } = idPrefixRange(prefix);
      const inRange = ids.filter(
        (id) =>
          Buffer.compare(Buffer.from(id), Buffer.from(from)) >= 0 &&
          Buffer.compare(Buffer.from(id), Buffer.from(to)) < 0,
      );
      expect(inRange).toEqual(ids.filter((id) => id.startsWith(prefix)));
    }
  });

  it('refuses what no session id could start with', () => {
    for (const prefix of ['', 'a b', 'é', 'x'.repeat(129), 'u\ud800']) {
      expect(() => idPrefixRange(prefix)).toThrow(RangeError);
    }
    expect(SESSION_ID_PATTERN.test('x'.repeat(128))).toBe(true);
    expect(idPrefixRange('x'.repeat(128)).to).toBe(`${'x'.repeat(127)}y`);
  });
});
