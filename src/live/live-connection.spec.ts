import { jest } from '@jest/globals';
import { type Principal } from '../common/auth/authenticator.js';
import { LiveConnection, MAX_SUBSCRIPTIONS_PER_CONNECTION } from './live-connection.js';
import { SlotCounts } from './slot-counts.js';

const principal = (key: string, extra: Partial<Principal> = {}): Principal => ({
  anonymous: false,
  who: key,
  key,
  scopes: new Set(['read']),
  sessionPrefix: undefined,
  ...extra,
});
const ANONYMOUS = principal('anonymous', { anonymous: true });
const IDLE_MS = 1000;

describe(LiveConnection.name, () => {
  let slots: SlotCounts;
  let idle: jest.Mock<() => void>;
  let expired: jest.Mock<() => void>;
  const connection = (source = '192.0.2.1') =>
    new LiveConnection(source, slots, { idleMs: IDLE_MS, idle, expired });

  beforeEach(() => {
    jest.useFakeTimers({ now: 1_000_000 });
    slots = new SlotCounts(3);
    idle = jest.fn();
    expired = jest.fn();
  });

  afterEach(() => jest.useRealTimers());

  it("holds one of its principal's slots per running subscription, counted over its connections", () => {
    const [one, two] = [connection(), connection('192.0.2.2')];
    one.acknowledge(principal('u1'), 'Bearer a');
    two.acknowledge(principal('u1'), 'Bearer b');

    expect([one.start('a'), one.start('b'), two.start('a')]).toEqual([true, true, true]);
    expect(two.room('b')).toEqual({
      kind: 'full',
      reason:
        'These credentials hold their most subscriptions on this instance (3, MAX_SUBSCRIPTIONS_PER_PRINCIPAL); end one first',
    });
    expect(two.start('b')).toBe(false);
    expect([slots.heldBy('u1'), one.size, two.size]).toEqual([3, 2, 1]);
    const other = connection();
    other.acknowledge(principal('u2'), undefined);
    expect(other.start('a')).toBe(true);
    expect(other.authorization).toBeUndefined();
    expect(one.authorization).toBe('Bearer a');
  });

  it('gives a slot back once when a subscription ends, and nothing for an id it does not run', () => {
    const sut = connection();
    sut.acknowledge(principal('u1'), undefined);
    sut.start('a');
    sut.start('b');

    expect(sut.end('a')).toBe(true);
    expect(sut.end('a')).toBe(false);
    expect(sut.end('never')).toBe(false);
    expect([slots.heldBy('u1'), sut.size]).toEqual([1, 1]);
  });

  it('gives every slot back at close, once, and its subscriptions ending later give nothing', () => {
    const sut = connection();
    const stays = connection();
    sut.acknowledge(principal('u1'), undefined);
    stays.acknowledge(principal('u1'), undefined);
    sut.start('a');
    sut.start('b');
    stays.start('a');

    sut.close();
    sut.close();
    expect(sut.end('a')).toBe(false);
    expect([slots.heldBy('u1'), slots.total]).toEqual([1, 1]);
    expect(sut.start('c')).toBe(false);
    expect(slots.total).toBe(1);
  });

  it('refuses a running id as a duplicate, and starts nothing before it is acknowledged', () => {
    const sut = connection();
    expect(sut.start('a')).toBe(false);
    expect(slots.total).toBe(0);
    sut.acknowledge(principal('u1'), undefined);
    sut.start('a');

    expect(sut.room('a')).toEqual({ kind: 'duplicate' });
    expect(sut.start('a')).toBe(false);
    expect(sut.room('b')).toEqual({ kind: 'room' });
    expect(slots.total).toBe(1);
  });

  it(`holds at most ${MAX_SUBSCRIPTIONS_PER_CONNECTION} subscriptions, whatever its principal may`, () => {
    slots = new SlotCounts(1000);
    const sut = connection();
    sut.acknowledge(principal('ops'), undefined);
    for (let index = 0; index < MAX_SUBSCRIPTIONS_PER_CONNECTION; index++) {
      expect(sut.start(`s${index}`)).toBe(true);
    }

    expect(sut.room('one-more')).toEqual({
      kind: 'full',
      reason: 'A connection may hold 100 subscriptions at once',
    });
    expect(sut.start('one-more')).toBe(false);
    sut.end('s0');
    expect(sut.start('one-more')).toBe(true);
  });

  it('counts anonymous callers by their source address', () => {
    const [here, alsoHere, there] = [connection(), connection(), connection('192.0.2.9')];
    for (const sut of [here, alsoHere, there]) sut.acknowledge(ANONYMOUS, undefined);
    here.start('a');
    here.start('b');
    alsoHere.start('a');

    expect(alsoHere.start('b')).toBe(false);
    expect(there.start('a')).toBe(true);
    expect(slots.heldBy('anonymous 192.0.2.1')).toBe(3);
    expect(slots.heldBy('anonymous 192.0.2.9')).toBe(1);
  });

  it('acknowledges once, and not after it closed (the socket went away during the check)', () => {
    const sut = connection();
    expect(sut.acknowledged).toBe(false);
    expect(sut.acknowledge(principal('u1'), undefined)).toBe(true);
    expect(sut.acknowledged).toBe(true);
    expect(sut.acknowledge(principal('u2'), undefined)).toBe(false);
    sut.start('a');
    expect(slots.heldBy('u1')).toBe(1);

    const gone = connection();
    gone.close();
    expect(gone.acknowledge(principal('u1'), undefined, Date.now())).toBe(false);
    expect(gone.acknowledged).toBe(false);
    jest.advanceTimersByTime(IDLE_MS * 10);
    expect(idle).not.toHaveBeenCalled();
  });

  describe('idle', () => {
    it('is told after idleMs acknowledged with no subscription, not before', () => {
      const sut = connection();
      jest.advanceTimersByTime(IDLE_MS * 5);
      expect(idle).not.toHaveBeenCalled();
      sut.acknowledge(principal('u1'), undefined);

      jest.advanceTimersByTime(IDLE_MS - 1);
      expect(idle).not.toHaveBeenCalled();
      jest.advanceTimersByTime(1);
      expect(idle).toHaveBeenCalledTimes(1);
    });

    it('is not told while a subscription runs; counts again from the end of the last one', () => {
      const sut = connection();
      sut.acknowledge(principal('u1'), undefined);
      jest.advanceTimersByTime(IDLE_MS - 1);
      sut.start('a');
      sut.start('b');
      jest.advanceTimersByTime(IDLE_MS * 5);
      sut.end('a');
      jest.advanceTimersByTime(IDLE_MS * 5);
      expect(idle).not.toHaveBeenCalled();

      sut.end('b');
      jest.advanceTimersByTime(IDLE_MS - 1);
      expect(idle).not.toHaveBeenCalled();
      jest.advanceTimersByTime(1);
      expect(idle).toHaveBeenCalledTimes(1);
    });

    it('is not told once closed, with or without subscriptions', () => {
      const [plain, busy] = [connection(), connection()];
      plain.acknowledge(principal('u1'), undefined);
      busy.acknowledge(principal('u1'), undefined);
      busy.start('a');
      plain.close();
      busy.close();
      jest.advanceTimersByTime(IDLE_MS * 5);

      expect(idle).not.toHaveBeenCalled();
    });

    it('a refused start leaves the count running', () => {
      slots = new SlotCounts(1);
      const sut = connection();
      sut.acknowledge(principal('u1'), undefined);
      const holder = connection();
      holder.acknowledge(principal('u1'), undefined);
      holder.start('a');
      jest.advanceTimersByTime(IDLE_MS - 1);
      expect(sut.start('a')).toBe(false);
      jest.advanceTimersByTime(1);

      expect(idle).toHaveBeenCalledTimes(1);
    });
  });

  describe('expiry', () => {
    it('is told when the credentials expire, however busy it is', () => {
      const sut = connection();
      sut.acknowledge(principal('u1', { expiresAt: Date.now() + 5000 }), undefined);
      sut.start('a');
      jest.advanceTimersByTime(4999);
      expect(expired).not.toHaveBeenCalled();
      jest.advanceTimersByTime(1);
      expect(expired).toHaveBeenCalledTimes(1);
    });

    it('is told at once for credentials already expired, never for ones that do not expire', () => {
      const late = connection();
      late.acknowledge(principal('u1', { expiresAt: Date.now() - 10 }), undefined);
      const forever = connection();
      forever.acknowledge(principal('u2'), undefined);
      jest.advanceTimersByTime(0);
      expect(expired).toHaveBeenCalledTimes(1);
      jest.advanceTimersByTime(IDLE_MS * 1000);
      expect(expired).toHaveBeenCalledTimes(1);
    });

    it('is not told once closed', () => {
      const sut = connection();
      sut.acknowledge(principal('u1', { expiresAt: Date.now() + 5000 }), undefined);
      sut.close();
      jest.advanceTimersByTime(10_000);
      expect(expired).not.toHaveBeenCalled();
    });
  });
});
