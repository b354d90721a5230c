import { validateEnvironment } from './environment.js';
import { BODY_ROOM_BYTES } from './read-limit-settings.js';
import { ScribeConfig } from './scribe-config.js';
import { refusal } from './testing/environment-fixtures.js';

// The bounds one variable sets on another, which validateEnvironment checks after each
// variable's own (environment-rules.ts).

describe(validateEnvironment.name, () => {
  describe('MAX_BODY_BYTES', () => {
    it('must leave room for the query around the largest message', () => {
      const error = refusal({
        MAX_MESSAGE_BYTES: '1000',
        MAX_BODY_BYTES: String(1000 + BODY_ROOM_BYTES - 1),
      });

      expect(BODY_ROOM_BYTES).toBe(65536);
      expect(error.message).toContain('MAX_BODY_BYTES');
      expect(error.message).toContain('MAX_MESSAGE_BYTES');
      expect(error.message).toBe(
        `MAX_BODY_BYTES must be at least MAX_MESSAGE_BYTES + 65536 bytes (66536); got 66535`,
      );
      expect(error.message).not.toContain('\n');
    });

    it('accepts exactly MAX_MESSAGE_BYTES + 65536', () => {
      const environment = validateEnvironment({
        MAX_MESSAGE_BYTES: '1000',
        MAX_BODY_BYTES: '66536',
      });

      expect(environment.MAX_BODY_BYTES).toBe(66536);
    });

    it('checks the default body limit against a raised message limit', () => {
      const error = refusal({ MAX_MESSAGE_BYTES: String(16 * 1024 * 1024) });

      expect(error.message).toMatch(/^MAX_BODY_BYTES must be at least MAX_MESSAGE_BYTES/);
    });
  });

  describe('MAX_RESPONSE_BYTES', () => {
    const small = { MAX_PAGE_BYTES: '65536', MAX_MESSAGE_BYTES: '1000', MAX_BODY_BYTES: '66536' };

    it('must hold one mutation and one page: body + page + message', () => {
      const error = refusal({ ...small, MAX_RESPONSE_BYTES: String(66536 + 65536 + 1000 - 1) });

      expect(error.message).toBe(
        'MAX_RESPONSE_BYTES must be at least MAX_BODY_BYTES + MAX_PAGE_BYTES + MAX_MESSAGE_BYTES (133072), so that one mutation and one page always fit; got 133071',
      );
      const least = validateEnvironment({ ...small, MAX_RESPONSE_BYTES: '133072' });
      expect(least.MAX_RESPONSE_BYTES).toBe(133072);
    });

    it('defaults to four pages, or to the least allowed when that is more', () => {
      expect(ScribeConfig.fromVariables({}).responseLimits.maxBytes).toBe(32 * 1024 * 1024);
      expect(
        ScribeConfig.fromVariables({ MAX_PAGE_BYTES: String(1024 * 1024) }).responseLimits.maxBytes,
      ).toBe(16 * 1024 * 1024 + 1024 * 1024 + 1024 * 1024);
      expect(ScribeConfig.fromVariables(small).responseLimits).toEqual({
        maxBytes: 4 * 65536,
        largeBytes: 65536,
        maxLarge: 2,
        slotTimeoutMs: 10_000,
      });
    });

    it('bounds MAX_LARGE_RESPONSES to 1..64', () => {
      expect(refusal({ MAX_LARGE_RESPONSES: '0' }).message).toMatch(/^MAX_LARGE_RESPONSES/);
      expect(refusal({ MAX_LARGE_RESPONSES: '65' }).message).toMatch(/^MAX_LARGE_RESPONSES/);
    });
  });

  describe('LISTEN_HEARTBEAT_MS and LISTEN_HEARTBEAT_DEADLINE_MS', () => {
    it.each([
      ['LISTEN_HEARTBEAT_MS', '99', 'LISTEN_HEARTBEAT_MS must not be less than 100'],
      ['LISTEN_HEARTBEAT_MS', '600001', 'LISTEN_HEARTBEAT_MS must not be greater than 600000'],
      [
        'LISTEN_HEARTBEAT_DEADLINE_MS',
        '199',
        'LISTEN_HEARTBEAT_DEADLINE_MS must not be less than 200',
      ],
      [
        'LISTEN_HEARTBEAT_DEADLINE_MS',
        '3600001',
        'LISTEN_HEARTBEAT_DEADLINE_MS must not be greater than 3600000',
      ],
    ])('refuses %s=%s', (key, value, message) => {
      expect(refusal({ [key]: value }).message).toBe(message);
    });

    it('accepts each at its edges', () => {
      expect(
        validateEnvironment({ LISTEN_HEARTBEAT_MS: '100', LISTEN_HEARTBEAT_DEADLINE_MS: '200' }),
      ).toMatchObject({ LISTEN_HEARTBEAT_MS: 100, LISTEN_HEARTBEAT_DEADLINE_MS: 200 });
      expect(
        validateEnvironment({
          LISTEN_HEARTBEAT_MS: '600000',
          LISTEN_HEARTBEAT_DEADLINE_MS: '3600000',
        }),
      ).toMatchObject({ LISTEN_HEARTBEAT_MS: 600000, LISTEN_HEARTBEAT_DEADLINE_MS: 3600000 });
    });

    it('needs a deadline longer than the interval, by a millisecond at least', () => {
      expect(
        refusal({ LISTEN_HEARTBEAT_MS: '5000', LISTEN_HEARTBEAT_DEADLINE_MS: '5000' }).message,
      ).toBe(
        'LISTEN_HEARTBEAT_DEADLINE_MS must be longer than LISTEN_HEARTBEAT_MS (5000); got 5000',
      );
      expect(refusal({ LISTEN_HEARTBEAT_MS: '7000' }).message).toBe(
        'LISTEN_HEARTBEAT_DEADLINE_MS must be longer than LISTEN_HEARTBEAT_MS (7000); got 6000',
      );
      expect(
        validateEnvironment({ LISTEN_HEARTBEAT_MS: '5000', LISTEN_HEARTBEAT_DEADLINE_MS: '5001' }),
      ).toMatchObject({ LISTEN_HEARTBEAT_MS: 5000, LISTEN_HEARTBEAT_DEADLINE_MS: 5001 });
    });
  });

  describe('MAX_SUBSCRIPTIONS_PER_PRINCIPAL and MAX_CONNECTIONS_PER_SOURCE', () => {
    it.each(['MAX_SUBSCRIPTIONS_PER_PRINCIPAL', 'MAX_CONNECTIONS_PER_SOURCE'])(
      '%s may be MAX_SUBSCRIPTIONS, not more',
      (key) => {
        expect(validateEnvironment({ MAX_SUBSCRIPTIONS: '50', [key]: '50' })).toMatchObject({
          [key]: 50,
        });
        expect(refusal({ MAX_SUBSCRIPTIONS: '50', [key]: '51' }).message).toBe(
          `${key} must be at most MAX_SUBSCRIPTIONS (50); got 51`,
        );
        expect(refusal({ [key]: '0' }).message).toBe(`${key} must not be less than 1`);
      },
    );

    it('refuses a SUBSCRIPTION_IDLE_MS below 100', () => {
      expect(refusal({ SUBSCRIPTION_IDLE_MS: '99' }).message).toBe(
        'SUBSCRIPTION_IDLE_MS must not be less than 100',
      );
    });
  });
});
