import { EventEmitter2 } from '@nestjs/event-emitter';
import { SPOOL_RETRY_REQUESTED_EVENT, SpoolRetryRequested } from '../message/message-events.js';
import { SpoolService } from './spool.service.js';

/** A collaborator retryNow does not touch: any use of it fails the test. */
function untouched<T extends object>(name: string): T {
  return new Proxy({} as T, {
    get: (_target, property) => {
      throw new Error(`retryNow used ${name}.${String(property)}`);
    },
  });
}

describe(`${SpoolService.name}.retryNow`, () => {
  let events: EventEmitter2;
  let sut: SpoolService;

  beforeEach(() => {
    events = new EventEmitter2();
    sut = new SpoolService(
      '/fake/spool',
      untouched('files'),
      0,
      untouched('irregular'),
      untouched('index'),
      untouched('binding'),
      untouched('reporter'),
      untouched('setAsideLog'),
      untouched('blocked'),
      untouched('ownLock'),
      untouched('writer'),
      untouched('adoption'),
      untouched('journal'),
      events,
    );
  });

  it('asks the write path for a retry through SpoolRetryRequested, under its stable name', () => {
    const heard: unknown[] = [];
    events.on(SPOOL_RETRY_REQUESTED_EVENT, (event: unknown) => heard.push(event));

    sut.retryNow();

    expect(SPOOL_RETRY_REQUESTED_EVENT).toBe('spool.retry-requested');
    expect(heard).toHaveLength(1);
    expect(heard[0]).toBeInstanceOf(SpoolRetryRequested);
  });

  it('asks again on every call: the write path decides whether a retry runs', () => {
    let heard = 0;
    events.on(SpoolRetryRequested.event, () => (heard += 1));

    sut.retryNow();
    sut.retryNow();

    expect(heard).toBe(2);
  });
});
