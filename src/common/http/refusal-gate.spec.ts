import { EventEmitter } from 'node:events';
import { type NextFunction, type Request, type Response } from 'express';
import { LogRateLimit } from '../errors/log-rate-limit.js';
import { ScribeErrorCode } from '../errors/scribe-error-code.js';
import { RefusalBudget } from './refusal-budget.js';
import {
  chargeRefusal,
  claimedRefusalsOnly,
  claimForScribe,
  credentialsAccepted,
  markRefused,
  refusalGate,
} from './refusal-gate.js';
import { answerRefusal } from './http-refusal.js';

class FakeResponse extends EventEmitter {
  statusCode = 200;
  locals: Record<string, unknown> = {};
  headers: Record<string, string> = {};
  body: unknown;
  setHeader(name: string, value: string) {
    this.headers[name] = value;
    return this;
  }
  status(code: number) {
    this.statusCode = code;
    return this;
  }
  json(body: unknown) {
    this.body = body;
    return this;
  }
  /** Ends the request with `status`, as the rest of the stack would. */
  finish(status: number) {
    this.statusCode = status;
    this.emit('finish');
    this.emit('close');
  }
  /** The connection goes away after `status` was set, before the answer was written. */
  abort(status: number) {
    this.statusCode = status;
    this.emit('close');
  }
}

function harness(perMinute = 2) {
  const warnings: string[] = [];
  const counted: string[] = [];
  const gate = refusalGate(
    perMinute,
    new RefusalBudget(perMinute, 100, () => 0),
    new LogRateLimit(60_000, 10, () => 0),
    { warn: (line: string) => warnings.push(line) },
    (reason) => counted.push(reason),
  );
  const send = (ip = '192.0.2.1') => {
    const response = new FakeResponse();
    let passed = false;
    const next: NextFunction = () => (passed = true);
    const request = { ip, res: response } as unknown as Request;
    gate(request, response as unknown as Response, next);
    return { request, response, passed, express: response as unknown as Response };
  };
  return { send, warnings, counted };
}

describe('refusalGate', () => {
  it('passes requests on while the source has budget left', () => {
    const { send } = harness();
    const { response, passed } = send();
    expect(passed).toBe(true);
    expect(response.body).toBeUndefined();
  });

  it.each([400, 401, 403, 413, 499])('charges the source for a request answered %i', (status) => {
    const { send } = harness(1);
    send().response.finish(status);
    expect(send().passed).toBe(false);
  });

  it.each([200, 302, 429, 500, 503])('never charges for a request answered %i', (status) => {
    const { send } = harness(1);
    for (let i = 0; i < 5; i++) send().response.finish(status);
    expect(send().passed).toBe(true);
  });

  it('turns a spent source away unread: 429, RATE_LIMITED, Retry-After, connection closed', () => {
    const { send } = harness(2);
    send().response.finish(400);
    send().response.finish(400);
    const { response, passed } = send();
    expect(passed).toBe(false);
    expect(response.statusCode).toBe(429);
    expect(response.headers).toEqual({ 'Retry-After': '30', Connection: 'close' });
    expect(response.body).toEqual({
      errors: [
        {
          message:
            'Too many refused requests from this address: more than 2 a minute (MAX_REFUSALS_PER_MINUTE). Retry after 30 s.',
          extensions: { code: ScribeErrorCode.RateLimited },
        },
      ],
    });
  });

  it('counts each refusal it charges, and each request it turns away, once', () => {
    const { send, counted } = harness(1);
    const refused = send();
    chargeRefusal(refused.express);
    refused.response.finish(401);
    send();
    send().response.finish(200);
    expect(counted).toEqual(['http_refused', 'http_rate_limited', 'http_rate_limited']);
  });

  it('keeps other sources served, IPv6 hosts by their /64', () => {
    const { send } = harness(1);
    send('2001:db8::1').response.finish(400);
    expect(send('2001:db8::2').passed).toBe(false);
    expect(send('2001:db8:0:1::1').passed).toBe(true);
    expect(send('192.0.2.9').passed).toBe(true);
  });

  it('says once, at WARN, that a source is being turned away', () => {
    const { send, warnings } = harness(1);
    send().response.finish(401);
    for (let i = 0; i < 5; i++) send();
    expect(warnings).toEqual([
      'Turning away requests from 192.0.2.1: more than 1 refused requests a minute (MAX_REFUSALS_PER_MINUTE)',
    ]);
  });

  it('is a plain pass-through at 0', () => {
    const { send } = harness(0);
    for (let i = 0; i < 5; i++) {
      const { response, passed } = send();
      expect(passed).toBe(true);
      response.finish(400);
      expect(response.listenerCount('close')).toBe(0);
    }
  });

  it('charges a request answered 200 whose credentials were refused (markRefused)', () => {
    const { send } = harness(1);
    const first = send();
    markRefused(first.request);
    first.response.finish(200);
    expect(send().passed).toBe(false);
  });

  it('marks nothing for a request without a response', () => {
    expect(() => markRefused(undefined)).not.toThrow();
    expect(() => markRefused({} as Request)).not.toThrow();
  });

  it('charges a refusal whose client went away before it was written', () => {
    const { send } = harness(1);
    send().response.abort(400);
    expect(send().passed).toBe(false);
  });

  it('never charges a client that went away from a request that was not refused', () => {
    const { send } = harness(1);
    for (let i = 0; i < 5; i++) send().response.abort(200);
    expect(send().passed).toBe(true);
  });

  it('counts requests in flight whose credentials are not known yet against the budget', async () => {
    const { send } = harness(3);
    // Three verdicts pending at once (an asynchronous check): a fourth is turned away.
    const pending = [send(), send(), send()];
    expect(pending.map((request) => request.passed)).toEqual([true, true, true]);
    const verdicts = pending.map(
      ({ express }) =>
        new Promise<void>((resolve) => setImmediate(() => resolve(chargeRefusal(express)))),
    );
    const fourth = send();
    expect(fourth.passed).toBe(false);
    expect(fourth.response.statusCode).toBe(429);
    await Promise.all(verdicts);
    expect(send().passed).toBe(false);
  });

  it('gives the reservation back as soon as the credentials are accepted', () => {
    const { send } = harness(2);
    for (let i = 0; i < 5; i++) credentialsAccepted(send().express);
    // Five accepted and still in flight hold nothing.
    expect(send().passed).toBe(true);
  });

  it('gives the reservation of a request that ends well back when it ends', () => {
    const { send } = harness(1);
    send().response.finish(200);
    expect(send().passed).toBe(true);
  });

  it('charges a refusal once, however it is reported', () => {
    const { send } = harness(2);
    const first = send();
    chargeRefusal(first.express);
    chargeRefusal(first.express);
    first.response.finish(401);
    // One of two spent: one more request passes, the next does not.
    const second = send();
    expect(second.passed).toBe(true);
    second.response.finish(200);
    expect(send().passed).toBe(true);
  });

  it('charges an accepted request that is refused later, when it ends', () => {
    const { send } = harness(1);
    const first = send();
    credentialsAccepted(first.express);
    credentialsAccepted(first.express);
    first.response.finish(400);
    expect(send().passed).toBe(false);
  });

  it('accepting after a refusal gives nothing back', () => {
    const { send } = harness(1);
    const first = send();
    chargeRefusal(first.express);
    credentialsAccepted(first.express);
    first.response.finish(401);
    expect(send().passed).toBe(false);
  });

  it('is a no-op on a request the gate did not see (budgets off)', () => {
    const response = new FakeResponse() as unknown as Response;
    expect(() => chargeRefusal(response)).not.toThrow();
    expect(() => credentialsAccepted(response)).not.toThrow();
  });

  describe("on a path shared with a host's GraphQL ('host' mode, claimedRefusalsOnly)", () => {
    /** A request through the gate, then through claimedRefusalsOnly as on the GraphQL path. */
    const shared = (send: ReturnType<typeof harness>['send']) => {
      const sent = send();
      let passed = false;
      claimedRefusalsOnly(sent.request, sent.express, () => (passed = true));
      expect(passed).toBe(true);
      return sent;
    };

    it("charges nothing for the host's refusals, answered 4xx or marked", () => {
      const { send } = harness(1);
      for (let i = 0; i < 5; i++) shared(send).response.finish(400);
      const marked = shared(send);
      markRefused(marked.request);
      marked.response.finish(200);
      expect(send().passed).toBe(true);
    });

    it('gives back the reservation of an unclaimed refusal', () => {
      const { send } = harness(1);
      shared(send).response.finish(400);
      // Nothing held: a refusal elsewhere is the first charge.
      send().response.finish(400);
      expect(send().passed).toBe(false);
    });

    it('charges a refusal Scribe claimed (claimForScribe)', () => {
      const { send } = harness(1);
      const claimed = shared(send);
      claimForScribe(claimed.express);
      claimed.response.finish(400);
      expect(send().passed).toBe(false);
    });

    it('charges a refusal marked by Scribe once claimed', () => {
      const { send } = harness(1);
      const claimed = shared(send);
      claimForScribe(claimed.express);
      markRefused(claimed.request);
      claimed.response.finish(200);
      expect(send().passed).toBe(false);
    });

    it("charges what Scribe's HTTP steps refuse themselves (answerRefusal)", () => {
      const { send } = harness(1);
      const sized = shared(send);
      const express = Object.assign(sized.express, {
        type: () => express,
        send: () => express,
      });
      answerRefusal(express, 413, ScribeErrorCode.PayloadTooLarge, 'too large');
      sized.response.finish(413);
      expect(send().passed).toBe(false);
    });

    it('charges what Scribe refuses at once (chargeRefusal), claimed or not', () => {
      const { send } = harness(1);
      const late = shared(send);
      chargeRefusal(late.express);
      late.response.finish(408);
      expect(send().passed).toBe(false);
    });

    it('claims nothing without a response', () => {
      expect(() => claimForScribe(undefined)).not.toThrow();
    });
  });
});
