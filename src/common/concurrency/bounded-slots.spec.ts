import { jest } from '@jest/globals';
import { BoundedSlots } from './bounded-slots.js';

describe(BoundedSlots.name, () => {
  afterEach(() => jest.useRealTimers());

  it('gives `size` slots at once, then serves waiters in arrival order as slots come back', async () => {
    const sut = new BoundedSlots(2, 60_000);
    const first = await sut.acquire();
    const second = await sut.acquire();
    const order: string[] = [];
    const third = sut.acquire().then((release) => (order.push('third'), release));
    const fourth = sut.acquire().then((release) => (order.push('fourth'), release));
    expect(sut.status()).toEqual({ active: 2, waiting: 2 });

    first!();
    const thirdRelease = await third;
    expect(order).toEqual(['third']);
    expect(sut.status()).toEqual({ active: 2, waiting: 1 });
    // A release called twice gives back one slot, not two.
    first!();
    expect(sut.status()).toEqual({ active: 2, waiting: 1 });

    second!();
    await fourth;
    expect(order).toEqual(['third', 'fourth']);
    thirdRelease!();
    (await fourth)!();
    expect(sut.status()).toEqual({ active: 0, waiting: 0 });
  });

  it('answers undefined after the timeout, and the slot goes to nobody else meanwhile', async () => {
    jest.useFakeTimers();
    const sut = new BoundedSlots(1, 100);
    const held = await sut.acquire();
    const waiting = sut.acquire();
    jest.advanceTimersByTime(99);
    expect(sut.status().waiting).toBe(1);
    jest.advanceTimersByTime(1);
    expect(await waiting).toBeUndefined();
    expect(sut.status()).toEqual({ active: 1, waiting: 0 });
    held!();
    expect(sut.status()).toEqual({ active: 0, waiting: 0 });
  });

  it('answers undefined when the signal aborts, before or while waiting', async () => {
    const sut = new BoundedSlots(1, 60_000);
    const aborted = new AbortController();
    aborted.abort();
    const held = await sut.acquire(aborted.signal);
    expect(held).toBeUndefined();

    const holder = await sut.acquire();
    const controller = new AbortController();
    const waiting = sut.acquire(controller.signal);
    controller.abort();
    expect(await waiting).toBeUndefined();
    expect(sut.status()).toEqual({ active: 1, waiting: 0 });
    holder!();
    expect(sut.status().active).toBe(0);
  });
});
