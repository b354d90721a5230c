import { arrivalAddress, isLoopbackAddress } from './local-address.js';

describe(isLoopbackAddress.name, () => {
  it.each(['127.0.0.1', '127.1.2.3', '127.255.255.254', '::1', '0:0:0:0:0:0:0:1'])(
    'counts %p',
    (address) => {
      expect(isLoopbackAddress(address)).toBe(true);
    },
  );

  it.each(['::ffff:127.0.0.1', '::FFFF:127.9.8.7'])('counts the mapped IPv4 form %p', (address) => {
    expect(isLoopbackAddress(address)).toBe(true);
  });

  it.each([
    '10.0.0.1',
    '192.168.1.20',
    '128.0.0.1',
    '0.0.0.0',
    '::',
    '::ffff:10.0.0.1',
    'fe80::1',
    '::2',
    '127.0.0.1.example.com',
    '127.0.0',
    'localhost',
    '',
    undefined,
  ])('does not count %p', (address) => {
    expect(isLoopbackAddress(address)).toBe(false);
  });
});

describe(arrivalAddress.name, () => {
  const arriving = (headers: Record<string, string>, localAddress?: string) =>
    arrivalAddress({ headers, socket: { localAddress } });

  it('is the socket local address of a request that names no forwarded client', () => {
    expect(arriving({}, '127.0.0.1')).toBe('127.0.0.1');
    expect(arriving({ 'user-agent': 'curl' }, '::1')).toBe('::1');
    expect(arrivalAddress({ headers: {}, socket: null })).toBeUndefined();
  });

  it.each(['forwarded', 'x-forwarded-for', 'x-real-ip'])(
    'is none for a request a proxy forwarded (%s), even on loopback',
    (header) => {
      expect(arriving({ [header]: '203.0.113.9' }, '127.0.0.1')).toBeUndefined();
      expect(arriving({ [header]: '' }, '127.0.0.1')).toBeUndefined();
    },
  );
});
