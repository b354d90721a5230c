import {
  accessSettings,
  isLoopback,
  parseApiTokens,
  type AccessVariables,
} from './access-settings.js';
import { InvalidEnvironmentError } from './invalid-environment.error.js';

const NOTHING: AccessVariables = {
  apiTokens: undefined,
  adminToken: undefined,
  jwtSecret: undefined,
  jwtPublicKey: undefined,
  jwtJwksUrl: undefined,
  jwtJwksCooldownMs: 30_000,
  jwtIssuer: undefined,
  jwtAudience: undefined,
  allowAnonymous: false,
  host: '127.0.0.1',
};

const JWKS: AccessVariables = {
  ...NOTHING,
  jwtIssuer: 'https://idp.example.com/',
  jwtAudience: 'scribe',
};

function refusal(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidEnvironmentError);
    return (error as Error).message;
  }
  throw new Error('expected a refusal');
}

describe(parseApiTokens.name, () => {
  it('reads token=scopes pairs, scopes joined by +, ignoring blanks and spaces around entries', () => {
    expect(parseApiTokens(' k1=read+append, k2=read ,,ops=admin')).toEqual([
      { token: 'k1', scopes: new Set(['read', 'append']) },
      { token: 'k2', scopes: new Set(['read']) },
      { token: 'ops', scopes: new Set(['admin']) },
    ]);
  });

  it.each(['k1', 'k1=', '=read', 'k 1=read', 'k1=read,k2'])('refuses the malformed %p', (text) => {
    expect(refusal(() => parseApiTokens(text))).toMatch(/^API_TOKENS must be a comma list/);
  });

  it('refuses an unknown scope, naming it', () => {
    expect(refusal(() => parseApiTokens('k1=read+write'))).toBe(
      'API_TOKENS names an unknown scope "write"; scopes are read, append, admin',
    );
  });

  it('refuses one token listed twice', () => {
    expect(refusal(() => parseApiTokens('k=read,k=admin'))).toBe(
      'API_TOKENS lists one token twice',
    );
  });
});

describe(isLoopback.name, () => {
  it.each(['127.0.0.1', '127.1.2.3', '::1', 'localhost'])('counts %p as loopback', (host) => {
    expect(isLoopback(host)).toBe(true);
  });

  it.each(['0.0.0.0', '::', '10.0.0.1', '128.0.0.1', 'example.com'])(
    'does not count %p',
    (host) => {
      expect(isLoopback(host)).toBe(false);
    },
  );
});

describe(accessSettings.name, () => {
  it('is anonymous on loopback with nothing configured', () => {
    expect(accessSettings(NOTHING)).toEqual({
      tokens: [],
      jwt: undefined,
      anonymous: true,
      anonymousForced: false,
      anonymousEverywhere: false,
    });
  });

  it('refuses to start anonymous on a non-loopback address, with one line naming the way out', () => {
    expect(refusal(() => accessSettings({ ...NOTHING, host: '0.0.0.0' }))).toMatch(
      /^HOST=0\.0\.0\.0 is not a loopback address and neither API_TOKENS nor a JWT key is set: .*ALLOW_ANONYMOUS=true/,
    );
  });

  it('starts anonymous on a non-loopback address when ALLOW_ANONYMOUS says so, and says it was forced', () => {
    const settings = accessSettings({ ...NOTHING, host: '0.0.0.0', allowAnonymous: true });
    expect(settings).toMatchObject({
      anonymous: true,
      anonymousForced: true,
      anonymousEverywhere: true,
    });
  });

  it('is not anonymous once tokens or a JWT key are configured, whatever the address', () => {
    expect(accessSettings({ ...NOTHING, apiTokens: 'k=read' }).anonymous).toBe(false);
    expect(accessSettings({ ...NOTHING, jwtSecret: 's', host: '0.0.0.0' }).anonymous).toBe(false);
    expect(
      accessSettings({ ...NOTHING, apiTokens: 'k=read', allowAnonymous: true, host: '0.0.0.0' }),
    ).toMatchObject({ anonymous: false, anonymousForced: false, anonymousEverywhere: false });
  });

  it('keeps ADMIN_TOKEN as an admin token, which alone leaves anonymous read and append on', () => {
    const settings = accessSettings({ ...NOTHING, adminToken: 'ops', apiTokens: 'k=read' });
    expect(settings.tokens).toEqual([
      { token: 'k', scopes: new Set(['read']) },
      { token: 'ops', scopes: new Set(['admin']) },
    ]);
    expect(accessSettings({ ...NOTHING, adminToken: 'ops' }).anonymous).toBe(true);
  });

  it('takes a JWT secret or a public key (its \\n written out), with issuer and audience, never both keys', () => {
    expect(
      accessSettings({ ...NOTHING, jwtSecret: 's', jwtIssuer: 'iss', jwtAudience: 'aud' }).jwt,
    ).toEqual({ key: { kind: 'secret', secret: 's' }, issuer: 'iss', audience: 'aud' });
    expect(accessSettings({ ...NOTHING, jwtPublicKey: 'a\\nb' }).jwt?.key).toEqual({
      kind: 'publicKey',
      publicKey: 'a\nb',
    });
    for (const keys of [
      { jwtSecret: 's', jwtPublicKey: 'k' },
      { jwtSecret: 's', jwtJwksUrl: 'https://idp.example.com/jwks' },
      { jwtPublicKey: 'k', jwtJwksUrl: 'https://idp.example.com/jwks' },
    ]) {
      expect(refusal(() => accessSettings({ ...JWKS, ...keys }))).toBe(
        'Set one of JWT_SECRET, JWT_PUBLIC_KEY or JWT_JWKS_URL',
      );
    }
  });

  it.each([
    [
      'https://idp.example.com/.well-known/jwks.json',
      'https://idp.example.com/.well-known/jwks.json',
    ],
    ['http://127.0.0.1:8080/jwks', 'http://127.0.0.1:8080/jwks'],
    ['http://localhost/jwks', 'http://localhost/jwks'],
    ['http://[::1]:9000/k', 'http://[::1]:9000/k'],
  ])('takes the key set at %s', (url, href) => {
    const settings = accessSettings({ ...JWKS, jwtJwksUrl: url, jwtJwksCooldownMs: 500 });
    expect(settings.jwt?.key).toEqual({ kind: 'jwks', url: href, cooldownMs: 500 });
    expect(settings.anonymous).toBe(false);
  });

  it.each([
    [{ jwtIssuer: undefined }],
    [{ jwtAudience: undefined }],
    [{ jwtIssuer: undefined, jwtAudience: undefined }],
  ])('refuses the key set without an issuer and an audience to check: %j', (unset) => {
    expect(
      refusal(() =>
        accessSettings({ ...JWKS, ...unset, jwtJwksUrl: 'https://idp.example.com/jwks' }),
      ),
    ).toBe(
      "JWT_JWKS_URL needs JWT_ISSUER and JWT_AUDIENCE (the provider's issuer and this API's audience): a provider's keys sign tokens for all its clients",
    );
  });

  it.each([
    'http://idp.example.com/jwks',
    'ftp://idp.example.com/jwks',
    'idp.example.com/jwks',
    'https://user:pass@idp.example.com/jwks',
    'https://user@idp.example.com/jwks',
    'http://127.0.0.1.example.com/jwks',
  ])('refuses the key set at %s: plain http only to loopback, no credentials', (url) => {
    expect(refusal(() => accessSettings({ ...JWKS, jwtJwksUrl: url }))).toBe(
      `JWT_JWKS_URL must be an https:// URL (http:// only to a loopback address), without credentials; got ${JSON.stringify(url)}`,
    );
  });
});
