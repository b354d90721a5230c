import { type HttpAdapterHost } from '@nestjs/core';
import { AuthFailureLog } from '../common/auth/auth-failure-log.js';
import { Authenticator } from '../common/auth/authenticator.js';
import { RefusalBudget } from '../common/http/refusal-budget.js';
import { ScribeConfig } from '../config/scribe-config.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { ConnectionGuard } from './connection-guard.js';
import { SlotCounts } from './slot-counts.js';

const SOURCE = '192.0.2.1';
const OTHER = '192.0.2.2';

/** A guard over MAX_SUBSCRIPTIONS=8 (a quarter, 2, unacknowledged) and 3 per source. */
function guard(variables: Record<string, string> = {}) {
  const config = ScribeConfig.fromVariables({
    MAX_SUBSCRIPTIONS: '8',
    MAX_CONNECTIONS_PER_SOURCE: '3',
    ...variables,
  });
  let now = 0;
  const budget = new RefusalBudget(2, 100, () => now);
  const sut = new ConnectionGuard(
    config,
    new Authenticator(config),
    new AuthFailureLog(undefined, { warn: () => undefined }),
    budget,
    {} as HttpAdapterHost,
    new SlotCounts(config.subscriptions.maxConnectionsPerSource),
    new MetricsService(),
  );
  return { sut, budget, later: (ms: number) => (now += ms) };
}

/** Opens `count` connections of `source`, acknowledged. */
function openAcknowledged(sut: ConnectionGuard, source: string, count: number): void {
  for (let index = 0; index < count; index++) {
    sut.opened(source);
    sut.acknowledged();
  }
}

describe(ConnectionGuard.name, () => {
  describe('connections per source', () => {
    it('lets a source hold MAX_CONNECTIONS_PER_SOURCE, acknowledged or not, then answers 429', () => {
      const { sut } = guard();
      sut.opened(SOURCE);
      openAcknowledged(sut, SOURCE, 1);
      expect(sut.refusal(SOURCE, 2)).toBeUndefined();
      openAcknowledged(sut, SOURCE, 1);

      expect(sut.refusal(SOURCE, 3)).toEqual({ status: 429, text: 'Too Many Requests' });
      expect(sut.refusal(OTHER, 3)).toBeUndefined();
      expect(sut.held(SOURCE)).toEqual({ source: 3, unacknowledged: 1 });
    });

    it("spends the source's refusal budget with each refusal, until its upgrades wait it out", () => {
      const { sut, budget, later } = guard();
      openAcknowledged(sut, SOURCE, 3);

      expect(sut.refusal(SOURCE, 3)?.status).toBe(429);
      expect(budget.retryAfterSeconds(SOURCE)).toBe(0);
      expect(sut.refusal(SOURCE, 3)).toEqual({ status: 429, text: 'Too Many Requests' });
      expect(budget.retryAfterSeconds(SOURCE)).toBe(30);
      expect(sut.refusal(SOURCE, 3)).toEqual({
        status: 429,
        text: 'Too Many Requests',
        retryAfterSeconds: 30,
      });
      // Turned away on its spent budget costs it nothing more.
      expect(budget.retryAfterSeconds(SOURCE)).toBe(30);
      expect(budget.retryAfterSeconds(OTHER)).toBe(0);
      later(30_000);
      expect(sut.refusal(SOURCE, 3)?.retryAfterSeconds).toBeUndefined();
    });

    it('gives a slot back when a connection closes, once per connection, however it got there', () => {
      const { sut } = guard();
      openAcknowledged(sut, SOURCE, 2);
      sut.opened(SOURCE);
      sut.closed(SOURCE, false);
      sut.closed(SOURCE, true);

      expect(sut.held(SOURCE)).toEqual({ source: 1, unacknowledged: 0 });
      expect(sut.refusal(SOURCE, 1)).toBeUndefined();
      sut.closed(SOURCE, true);
      sut.closed(SOURCE, true);
      expect(sut.held(SOURCE).source).toBe(0);
      openAcknowledged(sut, SOURCE, 3);
      expect(sut.refusal(SOURCE, 3)?.status).toBe(429);
    });

    it('defaults to a tenth of MAX_SUBSCRIPTIONS', () => {
      const { sut } = guard({ MAX_SUBSCRIPTIONS: '20', MAX_CONNECTIONS_PER_SOURCE: '' });
      openAcknowledged(sut, SOURCE, 2);

      expect(sut.refusal(SOURCE, 2)?.status).toBe(429);
    });
  });

  describe('the instance', () => {
    it('answers 503, spending nothing, once MAX_SUBSCRIPTIONS connections are open', () => {
      const { sut, budget } = guard();

      expect(sut.refusal(SOURCE, 7)).toBeUndefined();
      expect(sut.refusal(SOURCE, 8)).toEqual({ status: 503, text: 'Service Unavailable' });
      expect(budget.retryAfterSeconds(SOURCE)).toBe(0);
    });

    it('answers 503 while a quarter of MAX_SUBSCRIPTIONS wait unacknowledged', () => {
      const { sut } = guard();
      sut.opened(SOURCE);
      sut.opened(OTHER);

      expect(sut.refusal('192.0.2.3', 2)).toEqual({ status: 503, text: 'Service Unavailable' });
      sut.acknowledged();
      expect(sut.refusal('192.0.2.3', 2)).toBeUndefined();
    });

    it('says 503 rather than 429 when the instance is full and the source too', () => {
      const { sut, budget } = guard();
      openAcknowledged(sut, SOURCE, 3);

      expect(sut.refusal(SOURCE, 8)?.status).toBe(503);
      expect(budget.retryAfterSeconds(SOURCE)).toBe(0);
    });
  });
});
