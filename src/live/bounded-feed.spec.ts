import { ScribeErrorCode } from '../common/errors/scribe-error-code.js';
import { ScribeException } from '../common/errors/scribe.exception.js';
import { BoundedFeed, type FeedBounds } from './bounded-feed.js';

/** The SLOW_CONSUMER a reader is told (toEqual on errors compares messages only, not codes). */
const slowConsumer = (behind: number) => ({
  name: 'ScribeException',
  code: ScribeErrorCode.SlowConsumer,
  message: `This subscriber fell more than ${behind} messages behind and was ended; subscribe again with \`after\` set to the cursor of the last message it received`,
});

const gone = () => new ScribeException(ScribeErrorCode.SubscriptionInterrupted, 'gone');

/** What a read settles to: the item, 'done', or the code of the error it failed with. */
async function outcomeOf(read: Promise<IteratorResult<string>>): Promise<string> {
  try {
    const result = await read;
    return result.done ? 'done' : result.value;
  } catch (error) {
    return `error ${(error as ScribeException).code}`;
  }
}

describe(BoundedFeed.name, () => {
  let ends: number;
  let sut: BoundedFeed<string>;

  /** A feed of strings whose size is their length. */
  const feedOf = (bounds: FeedBounds) =>
    new BoundedFeed<string>(
      bounds,
      (item) => item.length,
      () => (ends += 1),
    );

  beforeEach(() => {
    ends = 0;
    sut = feedOf({ items: 100, bytes: 1000 });
  });

  describe('delivery', () => {
    it('hands queued items to the reader in the order they were pushed', async () => {
      expect(sut.push('a')).toBe(true);
      expect(sut.push('b')).toBe(true);
      expect(sut.push('c')).toBe(true);

      expect(await sut.next()).toEqual({ value: 'a', done: false });
      expect(await sut.next()).toEqual({ value: 'b', done: false });
      expect(await sut.next()).toEqual({ value: 'c', done: false });
    });

    it('hands an item straight to a reader that waits for one', async () => {
      const read = sut.next();

      expect(sut.push('a')).toBe(true);

      expect(await read).toEqual({ value: 'a', done: false });
    });

    it('queues what comes after the item a waiting reader took', async () => {
      const read = sut.next();

      sut.push('a');
      sut.push('b');
      sut.finish();

      expect(await outcomeOf(read)).toBe('a');
      expect(await outcomeOf(sut.next())).toBe('b');
      expect(await outcomeOf(sut.next())).toBe('done');
    });

    it('does not count an item handed to a waiting reader against the bounds', async () => {
      sut = feedOf({ items: 1, bytes: 1000 });
      const read = sut.next();

      expect(sut.push('a')).toBe(true);
      expect(sut.push('b')).toBe(true);

      expect(await outcomeOf(read)).toBe('a');
      expect(await outcomeOf(sut.next())).toBe('b');
      expect(ends).toBe(0);
    });

    it('is its own async iterator', async () => {
      sut.push('a');
      sut.push('b');
      sut.finish();
      const read: string[] = [];

      for await (const item of sut) read.push(item);

      expect(sut[Symbol.asyncIterator]()).toBe(sut);
      expect(read).toEqual(['a', 'b']);
    });
  });

  describe('bounds', () => {
    it('takes as many items as its bound, and ends the feed with SLOW_CONSUMER on one more', async () => {
      sut = feedOf({ items: 3, bytes: 1000 });

      expect([sut.push('a'), sut.push('b'), sut.push('c')]).toEqual([true, true, true]);
      expect(sut.isEnded).toBe(false);
      expect(sut.push('d')).toBe(false);

      expect(sut.isEnded).toBe(true);
      expect(ends).toBe(1);
      // What was queued is dropped: the reader learns at once that it fell behind.
      await expect(sut.next()).rejects.toMatchObject(slowConsumer(3));
      expect(await outcomeOf(sut.next())).toBe('done');
      expect(sut.push('e')).toBe(false);
    });

    it('takes items up to exactly its bytes, and ends the feed with SLOW_CONSUMER past them', async () => {
      sut = feedOf({ items: 100, bytes: 10 });

      expect(sut.push('aaaa')).toBe(true);
      expect(sut.push('bbbbbb')).toBe(true);
      expect(sut.push('c')).toBe(false);

      expect(ends).toBe(1);
      await expect(sut.next()).rejects.toMatchObject(slowConsumer(2));
    });

    it('always lets one item in, whatever its size, but nothing beside it', async () => {
      sut = feedOf({ items: 100, bytes: 10 });
      const large = 'x'.repeat(50);

      expect(sut.push(large)).toBe(true);
      expect(await outcomeOf(sut.next())).toBe(large);
      expect(sut.push(large)).toBe(true);
      expect(sut.push('y')).toBe(false);

      await expect(sut.next()).rejects.toMatchObject(slowConsumer(1));
    });

    it('makes room for as many items as the reader has read', async () => {
      sut = feedOf({ items: 2, bytes: 1000 });
      sut.push('a');
      sut.push('b');

      expect(await outcomeOf(sut.next())).toBe('a');
      expect(sut.push('c')).toBe(true);
      expect(sut.push('d')).toBe(false);
    });

    it('makes room for as many bytes as the reader has read', async () => {
      sut = feedOf({ items: 100, bytes: 10 });
      sut.push('aaaaaa');
      sut.push('bbbb');

      expect(await outcomeOf(sut.next())).toBe('aaaaaa');
      expect(sut.push('cccccc')).toBe(true);
      expect(sut.push('d')).toBe(false);
    });
  });

  describe('discard', () => {
    it('removes the queued items picked, keeping the others in order, and frees their bytes', async () => {
      sut = feedOf({ items: 100, bytes: 12 });
      for (const item of ['a1', 'b1', 'a2', 'a3', 'b2', 'a4']) sut.push(item);

      sut.discard((item) => item.startsWith('a'));

      // b1 and b2 hold 4 bytes: 8 more fit, and not 9.
      expect(sut.push('c'.repeat(8))).toBe(true);
      sut.finish();
      expect(await outcomeOf(sut.next())).toBe('b1');
      expect(await outcomeOf(sut.next())).toBe('b2');
      expect(await outcomeOf(sut.next())).toBe('c'.repeat(8));
      expect(await outcomeOf(sut.next())).toBe('done');
    });

    it('frees no bytes for what it keeps', () => {
      sut = feedOf({ items: 100, bytes: 12 });
      for (const item of ['a1', 'b1', 'a2', 'b2']) sut.push(item);

      sut.discard((item) => item.startsWith('a'));

      expect(sut.push('c'.repeat(9))).toBe(false);
    });
  });

  describe('finish', () => {
    it('hands the reader what is queued, then the end', async () => {
      sut.push('a');
      sut.push('b');

      sut.finish();

      expect(sut.isEnded).toBe(true);
      expect(sut.push('c')).toBe(false);
      expect(await outcomeOf(sut.next())).toBe('a');
      expect(await outcomeOf(sut.next())).toBe('b');
      expect(await outcomeOf(sut.next())).toBe('done');
      expect(await outcomeOf(sut.next())).toBe('done');
    });

    it('hands the reader what is queued, then the error, once', async () => {
      const error = gone();
      sut.push('a');

      sut.finish(error);

      expect(await outcomeOf(sut.next())).toBe('a');
      await expect(sut.next()).rejects.toBe(error);
      expect(await outcomeOf(sut.next())).toBe('done');
    });

    it('ends a reader that is waiting', async () => {
      const read = sut.next();

      sut.finish();

      expect(await read).toEqual({ value: undefined, done: true });
      expect(ends).toBe(1);
    });

    it('fails a reader that is waiting with the error, and tells it only once', async () => {
      const error = gone();
      const read = sut.next();

      sut.finish(error);

      await expect(read).rejects.toBe(error);
      expect(await outcomeOf(sut.next())).toBe('done');
    });

    it('takes effect once: a later finish, fail or return changes nothing, and onEnd runs once', async () => {
      expect(sut.isEnded).toBe(false);
      sut.push('a');

      sut.finish();
      sut.finish(gone());
      sut.fail(gone());

      expect(ends).toBe(1);
      expect(await outcomeOf(sut.next())).toBe('a');
      expect(await outcomeOf(sut.next())).toBe('done');
      await sut.return();
      expect(ends).toBe(1);
    });
  });

  describe('fail', () => {
    it('drops what is queued: the next read fails with the error, once', async () => {
      const error = gone();
      sut.push('a');
      sut.push('b');

      sut.fail(error);

      expect(sut.isEnded).toBe(true);
      expect(ends).toBe(1);
      await expect(sut.next()).rejects.toBe(error);
      expect(await outcomeOf(sut.next())).toBe('done');
    });

    it('fails a reader that is waiting', async () => {
      const error = gone();
      const read = sut.next();

      sut.fail(error);

      await expect(read).rejects.toBe(error);
    });

    it('leaves a feed that has finished as it was: its queue is still read', async () => {
      sut.push('a');
      sut.finish();

      sut.fail(gone());

      expect(ends).toBe(1);
      expect(await outcomeOf(sut.next())).toBe('a');
      expect(await outcomeOf(sut.next())).toBe('done');
    });
  });

  describe('return', () => {
    it('ends the feed and a reader that is waiting', async () => {
      const read = sut.next();

      expect(await sut.return()).toEqual({ value: undefined, done: true });

      expect(await read).toEqual({ value: undefined, done: true });
      expect(sut.isEnded).toBe(true);
      expect(ends).toBe(1);
      expect(sut.push('a')).toBe(false);
    });

    it('drops what is queued', async () => {
      sut.push('a');
      sut.push('b');

      await sut.return();

      expect(await outcomeOf(sut.next())).toBe('done');
    });

    it('drops what is queued and the error not yet told, after the feed finished', async () => {
      sut.push('a');
      sut.finish(gone());

      await sut.return();

      expect(await outcomeOf(sut.next())).toBe('done');
      expect(ends).toBe(1);
    });

    it('drops the error a failed feed had not told yet', async () => {
      sut.fail(gone());

      await sut.return();

      expect(await outcomeOf(sut.next())).toBe('done');
    });
  });
});
