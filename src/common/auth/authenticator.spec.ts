import { JwtService } from '@nestjs/jwt';
import { generateKeyPairSync } from 'node:crypto';
import { ScribeConfig } from '../../config/scribe-config.js';
import { Authenticator, type Authentication } from './authenticator.js';

const SECRET = 'a-long-test-secret-of-32-bytes!!';
const jwt = new JwtService();
const sign = (claims: Record<string, unknown>, options: Record<string, unknown> = {}) =>
  jwt.sign(claims, { secret: SECRET, issuer: 'scribe-tests', audience: 'scribe', ...options });

function authenticator(variables: Record<string, string>): Authenticator {
  return new Authenticator(ScribeConfig.fromVariables(variables));
}

function scopesOf(outcome: Authentication): string[] {
  if (outcome.kind !== 'principal') throw new Error(`refused: ${outcome.reason}`);
  return [...outcome.principal.scopes].sort();
}

describe(Authenticator.name, () => {
  const withTokens = authenticator({
    API_TOKENS: 'rw=read+append,ro=read,ops=admin',
    ADMIN_TOKEN: 'legacy-admin',
  });
  const withJwt = authenticator({
    JWT_SECRET: SECRET,
    JWT_ISSUER: 'scribe-tests',
    JWT_AUDIENCE: 'scribe',
  });

  it('lets anonymous callers read and append only where nothing is configured', async () => {
    const open = await authenticator({}).authenticate(undefined, '127.0.0.1');
    expect(open).toMatchObject({
      kind: 'principal',
      principal: { anonymous: true, key: 'anonymous' },
    });
    expect(scopesOf(open)).toEqual(['append', 'read']);
    expect(await withTokens.authenticate(undefined)).toEqual({
      kind: 'refused',
      reason: 'This server needs Authorization: Bearer <token>',
    });
    expect((await withJwt.authenticate('')).kind).toBe('refused');
  });

  it('admits anonymous callers only on a loopback local address, unless ALLOW_ANONYMOUS', async () => {
    const open = authenticator({});
    for (const local of ['127.0.0.1', '::1', '::ffff:127.0.0.1']) {
      expect((await open.authenticate(undefined, local)).kind).toBe('principal');
    }
    for (const local of ['10.0.0.5', '::ffff:192.168.1.2', 'fe80::1', undefined]) {
      expect(await open.authenticate(undefined, local)).toEqual({
        kind: 'refused',
        reason: 'This server needs Authorization: Bearer <token>',
      });
    }
    const forced = authenticator({ ALLOW_ANONYMOUS: 'true', HOST: '0.0.0.0' });
    expect((await forced.authenticate(undefined, '10.0.0.5')).kind).toBe('principal');
    const forcedOnLoopback = authenticator({ ALLOW_ANONYMOUS: 'true' });
    expect((await forcedOnLoopback.authenticate('', '10.0.0.5')).kind).toBe('principal');
  });

  it("decides a request's anonymous caller by the address its socket arrived on", async () => {
    const open = authenticator({});
    const on = (localAddress: string) =>
      ({ headers: {}, socket: { localAddress } }) as unknown as Parameters<
        Authenticator['forRequest']
      >[0];
    expect((await open.forRequest(on('127.0.0.1'))).kind).toBe('principal');
    expect((await open.forRequest(on('192.0.2.7'))).kind).toBe('refused');
  });

  it('gives a static token its scopes; admin includes the others', async () => {
    expect(scopesOf(await withTokens.authenticate('Bearer rw'))).toEqual(['append', 'read']);
    expect(scopesOf(await withTokens.authenticate('bearer ro'))).toEqual(['read']);
    expect(scopesOf(await withTokens.authenticate('Bearer ops'))).toEqual([
      'admin',
      'append',
      'read',
    ]);
    expect(scopesOf(await withTokens.authenticate('Bearer legacy-admin'))).toContain('admin');
    expect(await withTokens.authenticate('Bearer ro')).toMatchObject({
      principal: { anonymous: false, who: 'token #2', key: 'token #2', sessionPrefix: undefined },
    });
  });

  it.each(['Bearer wrong', 'Bearer r', 'Bearer rww', 'Basic rw', 'rw', 'Bearer ', 'Bearer rw x'])(
    'refuses %p, even where anonymous callers are let in',
    async (header) => {
      expect((await withTokens.authenticate(header)).kind).toBe('refused');
      expect((await authenticator({}).authenticate(header)).kind).toBe('refused');
    },
  );

  it('takes a JWT signed with the secret, for the issuer and audience, with its scopes and prefix', async () => {
    const outcome = await withJwt.authenticate(
      `Bearer ${sign({ sub: 'u1', scope: 'read append bogus', session_prefix: 'u1-' })}`,
    );
    expect(scopesOf(outcome)).toEqual(['append', 'read']);
    expect(outcome).toMatchObject({
      principal: { anonymous: false, who: 'jwt u1', sessionPrefix: 'u1-' },
    });
    expect(scopesOf(await withJwt.authenticate(`Bearer ${sign({ scopes: ['admin'] })}`))).toEqual([
      'admin',
      'append',
      'read',
    ]);
    expect(scopesOf(await withJwt.authenticate(`Bearer ${sign({})}`))).toEqual([]);
  });

  it.each([
    ['expired', () => sign({ scope: 'read' }, { expiresIn: -10 })],
    ['for another audience', () => sign({ scope: 'read' }, { audience: 'other' })],
    ['from another issuer', () => sign({ scope: 'read' }, { issuer: 'other' })],
    ['signed with another secret', () => sign({ scope: 'read' }, { secret: 'x'.repeat(32) })],
    [
      'unsigned (alg none)',
      () =>
        `${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${Buffer.from('{"scope":"admin","iss":"scribe-tests","aud":"scribe"}').toString('base64url')}.`,
    ],
    ['with an empty session_prefix', () => sign({ scope: 'read', session_prefix: '' })],
    ['with a session_prefix that is not a string', () => sign({ session_prefix: ['u1-'] })],
    ['with a session_prefix no id starts with', () => sign({ session_prefix: 'u1/' })],
    ['with a session_prefix of a lone surrogate', () => sign({ session_prefix: 'u\ud800' })],
    ['with a session_prefix longer than an id', () => sign({ session_prefix: 'u'.repeat(129) })],
    [
      'naming a critical extension',
      () => sign({ scope: 'read' }, { header: { alg: 'HS256', typ: 'JWT', crit: ['exp'] } }),
    ],
  ])('refuses a JWT %s', async (_name, token) => {
    const outcome = await withJwt.authenticate(`Bearer ${token()}`);
    expect(outcome.kind).toBe('refused');
  });

  it('says what a session_prefix must be', async () => {
    const outcome = await withJwt.authenticate(`Bearer ${sign({ session_prefix: 'a b' })}`);
    expect(outcome).toEqual({
      kind: 'refused',
      reason:
        "The JWT claim session_prefix must be 1-128 characters of A-Z a-z 0-9 . _ : -, as a session id's start",
    });
    const longest = await withJwt.authenticate(
      `Bearer ${sign({ session_prefix: 'u'.repeat(128) })}`,
    );
    expect(longest.kind).toBe('principal');
  });

  it('refuses a JWT where no key is configured', async () => {
    expect((await withTokens.authenticate(`Bearer ${sign({ scope: 'admin' })}`)).kind).toBe(
      'refused',
    );
  });

  it('keys a JWT by its issuer and subject, or, without a subject, by the token itself', async () => {
    const keyOf = async (token: string) => {
      const outcome = await withJwt.authenticate(`Bearer ${token}`);
      if (outcome.kind !== 'principal') throw new Error(outcome.reason);
      return outcome.principal.key;
    };
    const first = await keyOf(sign({ sub: 'u1', scope: 'read' }));
    expect(first).toBe('jwt ["scribe-tests","u1"]');
    expect(await keyOf(sign({ sub: 'u1', scope: 'append', jti: 'other' }))).toBe(first);
    expect(await keyOf(sign({ sub: 'u2' }))).toBe('jwt ["scribe-tests","u2"]');
    const open = authenticator({ JWT_SECRET: SECRET });
    const unissued = await open.authenticate(
      `Bearer ${jwt.sign({ sub: 'u1' }, { secret: SECRET })}`,
    );
    expect(unissued).toMatchObject({ principal: { key: 'jwt [null,"u1"]' } });
    // A subject that looks like an issuer and subject pair cannot pass for another's.
    expect(await keyOf(sign({ sub: '"u1' }))).toBe('jwt ["scribe-tests","\\"u1"]');
    const anonymousToken = sign({ scope: 'read', jti: 'a' });
    const subjectless = await keyOf(anonymousToken);
    expect(subjectless).toMatch(/^jwt token [\w-]{43}$/);
    expect(await keyOf(anonymousToken)).toBe(subjectless);
    expect(await keyOf(sign({ scope: 'read', jti: 'b' }))).not.toBe(subjectless);
    expect(await keyOf(sign({ sub: '', scope: 'read', jti: 'b' }))).toMatch(/^jwt token /);
  });

  it('keys a JWT without sub by what it signs: every spelling of its signature is one principal', async () => {
    // An RS256 signature's last base64url character carries 4 unused bits: 16 spellings verify.
    const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const sut = authenticator({
      JWT_PUBLIC_KEY: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    });
    const token = jwt.sign({ scope: 'read' }, { privateKey, algorithm: 'RS256' });
    const other = jwt.sign({ scope: 'read', n: 1 }, { privateKey, algorithm: 'RS256' });
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const keys = new Set<string>();
    let verified = 0;
    for (const last of alphabet) {
      const outcome = await sut.authenticate(`Bearer ${token.slice(0, -1)}${last}`);
      if (outcome.kind !== 'principal') continue;
      verified += 1;
      keys.add(outcome.principal.key);
    }
    expect(verified).toBeGreaterThan(1);
    expect(keys.size).toBe(1);
    const otherOutcome = await sut.authenticate(`Bearer ${other}`);
    expect(otherOutcome.kind === 'principal' && otherOutcome.principal.key).not.toBe([...keys][0]);
  });

  it('verifies a JWT against a public key, refusing one signed as HMAC with that key', async () => {
    const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const pem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
    const sut = authenticator({ JWT_PUBLIC_KEY: pem.replace(/\n/g, '\\n') });
    const good = jwt.sign({ scope: 'read' }, { privateKey, algorithm: 'RS256' });
    expect(scopesOf(await sut.authenticate(`Bearer ${good}`))).toEqual(['read']);
    // The algorithm-confusion attack: the public key used as an HMAC secret.
    const forged = jwt.sign({ scope: 'admin' }, { secret: pem, algorithm: 'HS256' });
    expect((await sut.authenticate(`Bearer ${forged}`)).kind).toBe('refused');
  });
});
