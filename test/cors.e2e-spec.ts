import { createTestApp, type TestApp } from './support/test-app.js';

// Browsers on the origins CORS_ORIGINS lists may call /graphql, with a token; other origins
// get no CORS headers, and no page on another origin calls anonymously.
const ALLOWED = 'https://chat.example.com';
const QUERY = { query: '{ __typename }' };

const preflight = (sut: TestApp, origin: string) =>
  sut
    .http()
    .options('/graphql')
    .set('Origin', origin)
    .set('Access-Control-Request-Method', 'POST')
    .set('Access-Control-Request-Headers', 'authorization,content-type');

describe('CORS', () => {
  describe('with CORS_ORIGINS and no tokens (anonymous callers let in on loopback)', () => {
    let sut: TestApp;

    beforeAll(async () => {
      sut = await createTestApp('sqlite', { CORS_ORIGINS: `${ALLOWED}, http://localhost:5173` });
    });

    afterAll(() => sut.close());

    it('answers a preflight from a listed origin with what it may send', async () => {
      const response = await preflight(sut, ALLOWED);

      expect(response.status).toBe(204);
      expect(response.headers['access-control-allow-origin']).toBe(ALLOWED);
      expect(response.headers['access-control-allow-methods']).toBe('GET,POST');
      expect(response.headers['access-control-allow-headers']).toMatch(/authorization/);
      expect(response.headers['access-control-allow-credentials']).toBeUndefined();
      expect(response.headers['access-control-max-age']).toBe('600');
    });

    it('gives another origin no CORS headers', async () => {
      const response = await preflight(sut, 'https://evil.example.net');

      expect(response.headers['access-control-allow-origin']).toBeUndefined();
    });

    it('refuses an anonymous call from a listed origin UNAUTHENTICATED, though the same call without an Origin passes', async () => {
      const crossOrigin = await sut.http().post('/graphql').set('Origin', ALLOWED).send(QUERY);

      expect(crossOrigin.status).toBe(401);
      expect(crossOrigin.body.errors[0].extensions.code).toBe('UNAUTHENTICATED');
      expect(crossOrigin.body.errors[0].message).toMatch(/another origin need Authorization/);
      expect(crossOrigin.headers['access-control-allow-origin']).toBe(ALLOWED);
      expect((await sut.http().post('/graphql').send(QUERY)).body.data.__typename).toBe('Query');
    });
  });

  describe('with CORS_ORIGINS and tokens', () => {
    let sut: TestApp;

    beforeAll(async () => {
      sut = await createTestApp('sqlite', { CORS_ORIGINS: ALLOWED, API_TOKENS: 'web=read+append' });
    });

    afterAll(() => sut.close());

    it('answers a call with a token from a listed origin, with the header that lets the page read it', async () => {
      const response = await sut
        .http()
        .post('/graphql')
        .set('Origin', ALLOWED)
        .set('Authorization', 'Bearer web')
        .send(QUERY);

      expect(response.status).toBe(200);
      expect(response.body.data.__typename).toBe('Query');
      expect(response.headers['access-control-allow-origin']).toBe(ALLOWED);
    });
  });

  describe('without CORS_ORIGINS', () => {
    let sut: TestApp;

    beforeAll(async () => {
      sut = await createTestApp('sqlite');
    });

    afterAll(() => sut.close());

    it('gives no origin CORS headers, and lets Apollo refuse a preflight as a possible CSRF', async () => {
      const response = await preflight(sut, ALLOWED);

      expect(response.headers['access-control-allow-origin']).toBeUndefined();
      expect(response.status).toBe(400);
    });
  });
});
