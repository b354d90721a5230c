import { jest } from '@jest/globals';
import { type Request, type Response } from 'express';
import { SCRIBE_REQUEST_HEADERS, scribeCors } from './scribe-cors.js';

/** A response that records its headers and whether it was ended. */
function response() {
  const headers = new Map<string, string>();
  const vary: string[] = [];
  const res = {
    statusCode: 200,
    ended: false,
    setHeader: (name: string, value: string) => headers.set(name.toLowerCase(), value),
    vary: (field: string) => vary.push(field),
    end() {
      res.ended = true;
    },
  };
  return { res, headers, vary };
}

function call(handler: ReturnType<typeof scribeCors>, method: string, origin: string | undefined) {
  const { res, headers, vary } = response();
  const next = jest.fn();
  const request = { method, headers: origin ? { origin } : {} } as unknown as Request;
  handler(request, res as unknown as Response, next);
  return { res, headers, vary, next };
}

describe('scribeCors', () => {
  const cors = scribeCors(['https://chat.example.com'], ['x-trace-id', 'authorization']);

  it('answers a preflight from a listed origin with Scribe’s headers and the extra ones, once each', () => {
    const { res, headers, next, vary } = call(cors, 'OPTIONS', 'https://chat.example.com');
    expect(next).not.toHaveBeenCalled();
    expect(res).toMatchObject({ statusCode: 204, ended: true });
    expect(vary).toEqual(['Origin']);
    expect(Object.fromEntries(headers)).toEqual({
      'access-control-allow-origin': 'https://chat.example.com',
      'access-control-expose-headers': 'Content-Disposition,X-Request-Id',
      'access-control-allow-methods': 'GET,POST',
      'access-control-allow-headers': [...SCRIBE_REQUEST_HEADERS, 'x-trace-id'].join(','),
      'access-control-max-age': '600',
      'content-length': '0',
    });
    expect(SCRIBE_REQUEST_HEADERS).toEqual(
      expect.arrayContaining(['apollographql-client-name', 'apollographql-client-version']),
    );
  });

  it('gives another origin no Allow-Origin, its preflight answered all the same', () => {
    const { headers, res } = call(cors, 'options', 'https://evil.example.net');
    expect(headers.has('access-control-allow-origin')).toBe(false);
    expect(res.statusCode).toBe(204);
  });

  it('passes any other request on, with Allow-Origin for a listed origin only', () => {
    const listed = call(cors, 'POST', 'https://chat.example.com');
    expect(listed.next).toHaveBeenCalledTimes(1);
    expect(listed.res.ended).toBe(false);
    expect(Object.fromEntries(listed.headers)).toEqual({
      'access-control-allow-origin': 'https://chat.example.com',
      'access-control-expose-headers': 'Content-Disposition,X-Request-Id',
    });
    const none = call(cors, 'GET', undefined);
    expect(none.next).toHaveBeenCalledTimes(1);
    expect(none.headers.size).toBe(0);
    expect(none.vary).toEqual(['Origin']);
  });

  it('allows Scribe’s own headers alone when given no extra ones', () => {
    const { headers } = call(
      scribeCors(['https://a.example.com']),
      'OPTIONS',
      'https://a.example.com',
    );
    expect(headers.get('access-control-allow-headers')).toBe(SCRIBE_REQUEST_HEADERS.join(','));
  });
});
