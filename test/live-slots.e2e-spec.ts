import { JwtService } from '@nestjs/jwt';
import { LiveChannels } from '../src/live/live-channels.js';
import { eventually, rawSocket, refusedUpgrade, type RawSocket } from './support/live-client.js';
import { createTestApp, type TestApp } from './support/test-app.js';

// One principal or one address cannot take every live slot (issue 18, item 4): each test fails
// on the code before MAX_SUBSCRIPTIONS_PER_PRINCIPAL, MAX_CONNECTIONS_PER_SOURCE and
// SUBSCRIPTION_IDLE_MS.
const LIVE = `subscription($s: ID!) { messageAppended(sessionId: $s) { node { id } } }`;
const SECRET = 'live-slots-secret-0123456789abcdef';
const jwt = new JwtService();
const bearer = (claims: Record<string, unknown>) =>
  `Bearer ${jwt.sign(claims, { secret: SECRET, expiresIn: 300 })}`;
const ADMIN = 'Bearer admin-token';
const codesOf = (message: any): unknown[] => {
  const errors = message.type === 'error' ? message.payload : message.payload?.errors;
  return (errors ?? []).map((error: any) => error.extensions?.code);
};

async function listening(variables: Record<string, string>) {
  const sut = await createTestApp('sqlite', {
    JWT_SECRET: SECRET,
    ADMIN_TOKEN: 'admin-token',
    // Every source below is written in X-Forwarded-For by the test, over loopback.
    TRUST_PROXY: 'loopback',
    ...variables,
  });
  await sut.app.listen(0, '127.0.0.1');
  const url = `${(await sut.app.getUrl()).replace(/^http/, 'ws')}/graphql`;
  return { sut, url, channels: sut.app.get(LiveChannels) };
}

describe('subscriptions per principal', () => {
  let sut: TestApp;
  let url: string;
  let channels: LiveChannels;
  const sockets: RawSocket[] = [];

  beforeAll(async () => {
    ({ sut, url, channels } = await listening({
      MAX_SUBSCRIPTIONS: '6',
      MAX_SUBSCRIPTIONS_PER_PRINCIPAL: '3',
      MAX_CONNECTIONS_PER_SOURCE: '6',
      MAX_REFUSALS_PER_MINUTE: '0',
    }));
  });

  afterEach(async () => {
    for (const socket of sockets.splice(0)) socket.socket.terminate();
    await eventually(() => channels.openCount === 0);
  });

  afterAll(() => sut.close());

  async function connected(authorization: string, source = '198.51.100.1'): Promise<RawSocket> {
    const socket = await rawSocket(url, { headers: { 'x-forwarded-for': source } });
    sockets.push(socket);
    socket.send({ type: 'connection_init', payload: { authorization } });
    await socket.next('connection_ack');
    return socket;
  }

  /** Sends `count` subscriptions round-robin over `over`: how many run, the codes of the rest. */
  async function subscribeAll(over: RawSocket[], count: number, prefix: string) {
    const before = channels.openCount;
    const ids = new Set<string>();
    for (let index = 0; index < count; index++) {
      const id = `${prefix}${index}`;
      ids.add(id);
      over[index % over.length].send({
        id,
        type: 'subscribe',
        payload: { query: LIVE, variables: { s: `u1-${id}` } },
      });
    }
    const codes = () =>
      over.flatMap((socket) =>
        socket.messages.filter((message) => ids.has(message.id)).flatMap(codesOf),
      );
    // Each one either runs (a feed opens) or is refused (an error arrives).
    await eventually(() => channels.openCount - before + codes().length === count);
    return { opened: channels.openCount - before, codes: codes() };
  }

  it('one JWT filling its share over several sockets leaves room for an admin and another user', async () => {
    const user = bearer({ sub: 'u1', scope: 'read', session_prefix: 'u1-' });
    const own = [await connected(user), await connected(user, '198.51.100.2')];
    expect(await subscribeAll(own, 6, 'a')).toEqual({
      opened: 3,
      codes: ['TOO_MANY_SUBSCRIPTIONS', 'TOO_MANY_SUBSCRIPTIONS', 'TOO_MANY_SUBSCRIPTIONS'],
    });
    // Another token for the same subject and issuer is the same principal.
    const again = bearer({ sub: 'u1', scope: 'read', session_prefix: 'u1-', jti: 'second' });
    expect(await subscribeAll([await connected(again)], 1, 'b')).toEqual({
      opened: 0,
      codes: ['TOO_MANY_SUBSCRIPTIONS'],
    });
    expect(await subscribeAll([await connected(ADMIN)], 2, 'c')).toEqual({ opened: 2, codes: [] });
    const other = bearer({ sub: 'u2', scope: 'read' });
    expect(await subscribeAll([await connected(other)], 1, 'd')).toEqual({ opened: 1, codes: [] });
  });

  it('gives a slot back once, when a subscription completes and when its socket closes', async () => {
    const user = bearer({ sub: 'u3', scope: 'read' });
    const first = await connected(user);
    expect(await subscribeAll([first], 3, 'e')).toEqual({ opened: 3, codes: [] });
    first.send({ id: 'e0', type: 'complete' });
    await eventually(() => channels.openCount === 2);
    // Completing it again, or an id never started, gives nothing back.
    first.send({ id: 'e0', type: 'complete' });
    first.send({ id: 'never', type: 'complete' });
    expect(await subscribeAll([first], 2, 'f')).toEqual({
      opened: 1,
      codes: ['TOO_MANY_SUBSCRIPTIONS'],
    });
    first.socket.terminate();
    await first.closed;
    await eventually(() => channels.openCount === 0);
    // Every slot back, and no more than every slot.
    const second = await connected(user);
    expect(await subscribeAll([second], 4, 'g')).toEqual({
      opened: 3,
      codes: ['TOO_MANY_SUBSCRIPTIONS'],
    });
  });

  it("gives a principal's slots back when its token expires and the connection is closed", async () => {
    // JWT times are whole seconds: `expiresIn: 1` leaves 0 to 1 s, which a loaded machine spends
    // before the three subscriptions open. A few seconds is room enough, and still short.
    const short = `Bearer ${jwt.sign({ sub: 'u4', scope: 'read' }, { secret: SECRET, expiresIn: 4 })}`;
    const expiring = await connected(short);
    expect(await subscribeAll([expiring], 3, 'x')).toEqual({ opened: 3, codes: [] });
    expect((await expiring.closed).code).toBe(4401);
    const renewed = await connected(bearer({ sub: 'u4', scope: 'read' }));
    expect(await subscribeAll([renewed], 4, 'y')).toEqual({
      opened: 3,
      codes: ['TOO_MANY_SUBSCRIPTIONS'],
    });
  });

  it('anonymous callers count per source address', async () => {
    const {
      sut: open,
      url: openUrl,
      channels: openChannels,
    } = await listening({
      JWT_SECRET: '',
      ADMIN_TOKEN: '',
      // Anonymous callers through a proxy (the forwarded sources below) only when it is forced.
      ALLOW_ANONYMOUS: 'true',
      MAX_SUBSCRIPTIONS: '6',
      MAX_SUBSCRIPTIONS_PER_PRINCIPAL: '2',
    });
    const mine: RawSocket[] = [];
    try {
      const anonymous = async (source: string) => {
        const socket = await rawSocket(openUrl, { headers: { 'x-forwarded-for': source } });
        mine.push(socket);
        socket.send({ type: 'connection_init' });
        await socket.next('connection_ack');
        return socket;
      };
      const here = await anonymous('203.0.113.1');
      const there = await anonymous('203.0.113.2');
      for (const id of ['h0', 'h1', 'h2']) {
        here.send({ id, type: 'subscribe', payload: { query: LIVE, variables: { s: id } } });
      }
      const refused = await here.next('error');
      expect(refused.id).toBe('h2');
      expect(refused.payload[0].extensions.code).toBe('TOO_MANY_SUBSCRIPTIONS');
      there.send({ id: 't0', type: 'subscribe', payload: { query: LIVE, variables: { s: 't' } } });
      await eventually(() => openChannels.openCount === 3);
    } finally {
      for (const socket of mine) socket.socket.terminate();
      await open.close();
    }
  });
});

describe('anonymous callers through a proxy on this machine', () => {
  it('are refused unless ALLOW_ANONYMOUS=true, though they arrive on loopback', async () => {
    const { sut, url } = await listening({ JWT_SECRET: '', ADMIN_TOKEN: '' });
    try {
      const proxied = await rawSocket(url, { headers: { 'x-forwarded-for': '203.0.113.9' } });
      proxied.send({ type: 'connection_init' });
      expect((await proxied.closed).code).toBe(4401);
      // The same caller straight on loopback is anonymous.
      const direct = await rawSocket(url);
      direct.send({ type: 'connection_init' });
      await direct.next('connection_ack');
      direct.socket.terminate();
    } finally {
      await sut.close();
    }
  });
});

describe('connections per source', () => {
  it('caps one address (an IPv6 /64) at MAX_CONNECTIONS_PER_SOURCE with 429; others still connect', async () => {
    const { sut, url } = await listening({
      MAX_SUBSCRIPTIONS: '20',
      MAX_CONNECTIONS_PER_SOURCE: '3',
      MAX_REFUSALS_PER_MINUTE: '3',
    });
    const held: RawSocket[] = [];
    const forwarded = (address: string) => ({ 'x-forwarded-for': address });
    const from = (address: string) => ({ headers: forwarded(address) });
    try {
      held.push(await rawSocket(url, from('2001:db8:0:1::1')));
      held.push(await rawSocket(url, from('2001:db8:0:1::2')));
      const third = await rawSocket(url, from('2001:db8:0:1::3'));
      held.push(third);
      third.send({ type: 'connection_init', payload: { authorization: ADMIN } });
      await third.next('connection_ack');
      // Acknowledged or not, they count; another host of the same /64 is the same source.
      expect(await refusedUpgrade(url, forwarded('2001:db8:0:1::99'))).toBe(429);
      held.push(await rawSocket(url, from('2001:db8:0:2::1')));
      held.push(await rawSocket(url, from('192.0.2.7')));
      // A closed connection gives its slot back.
      held[0].socket.close();
      await held[0].closed;
      held.push(await rawSocket(url, from('2001:db8:0:1::4')));
      // The refusals were the client's: they spend its refusal budget, over HTTP too.
      expect(await refusedUpgrade(url, forwarded('2001:db8:0:1::5'))).toBe(429);
      expect(await refusedUpgrade(url, forwarded('2001:db8:0:1::6'))).toBe(429);
      const http = await sut
        .http()
        .post('/graphql')
        .set({ 'content-type': 'application/json', 'x-forwarded-for': '2001:db8:0:1::7' })
        .send({ query: '{ __typename }' });
      expect(http.status).toBe(429);
    } finally {
      for (const socket of held) socket.socket.terminate();
      await sut.close();
    }
  });
  it('gives the slot of a connection that never sent connection_init back when it times out', async () => {
    const { sut, url } = await listening({
      MAX_CONNECTIONS_PER_SOURCE: '1',
      MAX_REFUSALS_PER_MINUTE: '0',
    });
    const from = { headers: { 'x-forwarded-for': '192.0.2.44' } };
    try {
      const silent = await rawSocket(url, from);
      expect(await refusedUpgrade(url, from.headers)).toBe(429);
      expect((await silent.closed).code).toBe(4408);
      const next = await rawSocket(url, from);
      next.socket.terminate();
    } finally {
      await sut.close();
    }
  });
});

describe('idle connections', () => {
  it('an acknowledged connection with no subscription is closed after SUBSCRIPTION_IDLE_MS, and frees its slot', async () => {
    const { sut, url, channels } = await listening({
      MAX_SUBSCRIPTIONS: '2',
      MAX_CONNECTIONS_PER_SOURCE: '2',
      MAX_SUBSCRIPTIONS_PER_PRINCIPAL: '2',
      SUBSCRIPTION_IDLE_MS: '300',
    });
    const held: RawSocket[] = [];
    try {
      const busy = await rawSocket(url);
      held.push(busy);
      busy.send({ type: 'connection_init', payload: { authorization: ADMIN } });
      await busy.next('connection_ack');
      busy.send({ id: 's', type: 'subscribe', payload: { query: LIVE, variables: { s: 'x' } } });
      await eventually(() => channels.openCount === 1);
      // Armed after the busy one started its subscription, so it would have fired first.
      const idle = await rawSocket(url);
      held.push(idle);
      idle.send({ type: 'connection_init', payload: { authorization: ADMIN } });
      await idle.next('connection_ack');
      // Both slots of the instance (and of the source) are held.
      expect(await refusedUpgrade(url)).toBe(503);
      expect(await idle.closed).toEqual({
        code: 4000,
        reason: expect.stringMatching(/SUBSCRIPTION_IDLE_MS/),
      });
      // Its slot is free again; the one with a subscription is still open.
      const next = await rawSocket(url);
      held.push(next);
      busy.send({ type: 'ping' });
      await busy.next('pong');
      // Its last subscription ended: it is idle from then on.
      busy.send({ id: 's', type: 'complete' });
      expect((await busy.closed).code).toBe(4000);
      await eventually(() => channels.openCount === 0);
    } finally {
      for (const socket of held) socket.socket.terminate();
      await sut.close();
    }
  });
});
