import { isLoopbackAddress } from './local-address.js';

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
