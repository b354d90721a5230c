import { jest } from '@jest/globals';
import { BoundedSlots } from '../concurrency/bounded-slots.js';
import { ScribeErrorCode } from '../errors/scribe-error-code.js';
import { ScribeException } from '../errors/scribe.exception.js';
import { ResponseBudget } from './response-budget.js';

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

describe(ResponseBudget.name, () => {
  const limits = { maxBytes: 1000, largeBytes: 400 };

  it('reserves up to maxBytes exactly, refuses past it naming the bound, and stays refused', async () => {
    const sut = new ResponseBudget(limits, new BoundedSlots(1, 60_000));
    await sut.admit(400);
    sut.charge(600);
    expect(sut.bytes).toBe(1000);
    expect(sut.refused).toBeUndefined();

    expect(() => sut.charge(1)).toThrow(ScribeException);
    const refusal = sut.refused!;
    expect(refusal.code).toBe(ScribeErrorCode.QueryTooComplex);
    expect(refusal.message).toContain('more than 1000 bytes (MAX_RESPONSE_BYTES)');
    // Nothing more is read for a refused answer, however small.
    expect(() => sut.charge(0)).toThrow(refusal);
    await expect(sut.admit(0)).rejects.toBe(refusal);
    sut.end();
  });

  it('takes no slot up to largeBytes, one past it, and gives it back at the end', async () => {
    const slots = new BoundedSlots(1, 60_000);
    const sut = new ResponseBudget(limits, slots);
    await sut.admit(400);
    expect(slots.status().active).toBe(0);
    await Promise.all([sut.admit(1), sut.admit(1)]);
    // One request holds one slot, however many of its resolvers cross the line at once.
    expect(slots.status()).toEqual({ active: 1, waiting: 0 });
    sut.end();
    await tick();
    expect(slots.status().active).toBe(0);
  });

  it('waits for a slot while another large answer holds it', async () => {
    const slots = new BoundedSlots(1, 60_000);
    const holder = new ResponseBudget(limits, slots);
    const waiter = new ResponseBudget(limits, slots);
    await holder.admit(500);
    let admitted = false;
    const waiting = waiter.admit(500).then(() => (admitted = true));
    await tick();
    expect(admitted).toBe(false);
    holder.end();
    await waiting;
    expect(admitted).toBe(true);
    waiter.end();
    await tick();
    expect(slots.status()).toEqual({ active: 0, waiting: 0 });
  });

  it('refuses a reservation that waited for its slot while a sibling passed the bound', async () => {
    const slots = new BoundedSlots(1, 60_000);
    const holder = new ResponseBudget(limits, slots);
    await holder.admit(500);
    const sut = new ResponseBudget(limits, slots);
    const waiting = sut.admit(500);
    expect(() => sut.charge(600)).toThrow(ScribeException);
    holder.end();
    await expect(waiting).rejects.toBe(sut.refused);
    sut.end();
  });

  it('answers RESPONSE_SLOT_TIMEOUT when no slot comes, and a late slot goes straight back', async () => {
    const slots = new BoundedSlots(1, 10);
    const holder = new ResponseBudget(limits, slots);
    await holder.admit(500);
    const waiter = new ResponseBudget(limits, slots);
    await expect(waiter.admit(500)).rejects.toMatchObject({
      code: ScribeErrorCode.ResponseSlotTimeout,
    });

    const slow = new BoundedSlots(1, 60_000);
    const first = new ResponseBudget(limits, slow);
    await first.admit(500);
    const ended = new ResponseBudget(limits, slow);
    const pending = ended.admit(500);
    ended.end();
    first.end();
    await pending;
    await tick();
    expect(slow.status()).toEqual({ active: 0, waiting: 0 });
    holder.end();
  });

  it('asks for its signal only when it waits for a slot, and stops waiting when it aborts', async () => {
    const slots = new BoundedSlots(1, 60_000);
    const holder = new ResponseBudget(limits, slots);
    await holder.admit(500);
    const controller = new AbortController();
    const signal = jest.fn(() => controller.signal);
    const sut = new ResponseBudget(limits, slots, signal);

    await sut.admit(400);
    expect(signal).not.toHaveBeenCalled();
    const waiting = sut.admit(1);
    expect(signal).toHaveBeenCalledTimes(1);
    controller.abort();

    await expect(waiting).rejects.toMatchObject({ code: ScribeErrorCode.ResponseSlotTimeout });
    expect(slots.status()).toEqual({ active: 1, waiting: 0 });
    holder.end();
    sut.end();
  });
});
