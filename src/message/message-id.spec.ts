import { messageIdFor } from './message-id.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-([0-9a-f])[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe(messageIdFor.name, () => {
  it('derives the same name-based (v5) id from the same session and client id, every time', () => {
    const first = messageIdFor('session-1', 'client-1');

    expect(messageIdFor('session-1', 'client-1')).toBe(first);
    expect(UUID.exec(first)?.[1]).toBe('5');
  });

  it.each([
    ['another session', 'session-2', 'client-1'],
    ['another client id', 'session-1', 'client-2'],
    ['the parts shifted across the boundary', 'session-1c', 'lient-1'],
  ])('derives a different id for %s', (_case, sessionId, clientMessageId) => {
    expect(messageIdFor(sessionId, clientMessageId)).not.toBe(
      messageIdFor('session-1', 'client-1'),
    );
  });

  it('keeps a fixed namespace, so ids stay the same across versions and instances', () => {
    expect(messageIdFor('demo', 'c-1')).toBe('815a7ee8-c83d-5527-b3cd-d55ae4c0e990');
  });

  it.each([null, undefined])(
    'gives a new time-ordered (v7) id without a client id (%s), each sorting after the last',
    (clientMessageId) => {
      const ids = Array.from({ length: 1000 }, () => messageIdFor('session-1', clientMessageId));

      expect(new Set(ids).size).toBe(ids.length);
      expect(ids.every((id) => UUID.exec(id)?.[1] === '7')).toBe(true);
      expect([...ids].sort()).toEqual(ids);
    },
  );

  it('starts a time-ordered id with the milliseconds it was issued at', () => {
    const before = Date.now();
    const id = messageIdFor('session-1', null);
    const after = Date.now();

    const ms = parseInt(id.replaceAll('-', '').slice(0, 12), 16);
    expect(ms).toBeGreaterThanOrEqual(before);
    expect(ms).toBeLessThanOrEqual(after);
  });
});
