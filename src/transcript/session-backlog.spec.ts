import { deferred } from '../common/testing/deferred.js';
import { acceptedRecord } from '../message/testing/message-record.fixture.js';
import { SessionBacklog, type BacklogEntry, type Backlog } from './session-backlog.js';

const LOCATION = { segment: 'segment-1', offset: 0, length: 10 };

function journaledEntry(sessionId: string, content: string): BacklogEntry {
  return { record: acceptedRecord(sessionId, content), location: { ...LOCATION } };
}

function bufferedEntry(sessionId: string, content: string): BacklogEntry {
  return { record: acceptedRecord(sessionId, content), location: null };
}

const contentsOf = (entries: readonly BacklogEntry[]) => entries.map((e) => e.record.content);

describe(SessionBacklog.name, () => {
  let sut: SessionBacklog;

  beforeEach(() => {
    sut = new SessionBacklog();
  });

  it('starts empty', () => {
    expect(sut.total).toBe(0);
    expect(sut.totalBuffered).toBe(0);
    expect(sut.sessions()).toEqual([]);
    expect(sut.size('s1')).toBe(0);
  });

  describe('a session backlog', () => {
    it('keeps pushed entries oldest first, and peeks at the oldest without removing them', async () => {
      await sut.withSession('s1', async (backlog) => {
        backlog.push([journaledEntry('s1', 'a'), journaledEntry('s1', 'b')]);
        backlog.push([journaledEntry('s1', 'c')]);

        expect(backlog.sessionId).toBe('s1');
        expect(backlog.size).toBe(3);
        expect(contentsOf(backlog.peek(2))).toEqual(['a', 'b']);
        expect(contentsOf(backlog.peek(10))).toEqual(['a', 'b', 'c']);
        expect(backlog.size).toBe(3);
      });

      expect(sut.size('s1')).toBe(3);
      expect(sut.total).toBe(3);
      expect(sut.sessions()).toEqual(['s1']);
    });

    it('shifts the oldest out and returns them', async () => {
      await sut.withSession('s1', async (backlog) => {
        backlog.push(['a', 'b', 'c'].map((content) => journaledEntry('s1', content)));

        expect(contentsOf(backlog.shift(2))).toEqual(['a', 'b']);
        expect(contentsOf(backlog.peek(10))).toEqual(['c']);
      });

      expect(sut.size('s1')).toBe(1);
      expect(sut.total).toBe(1);
    });

    it('forgets a session once its backlog is empty', async () => {
      await sut.withSession('s1', async (backlog) => {
        backlog.push([journaledEntry('s1', 'a')]);
      });
      await sut.withSession('s2', async (backlog) => {
        backlog.push([journaledEntry('s2', 'b')]);
      });

      await sut.withSession('s1', async (backlog) => {
        expect(contentsOf(backlog.shift(5))).toEqual(['a']);
        expect(backlog.size).toBe(0);
      });

      expect(sut.sessions()).toEqual(['s2']);
      expect(sut.total).toBe(1);
    });

    it('keeps nothing for a session that only pushed nothing', async () => {
      await sut.withSession('s1', async (backlog) => backlog.push([]));

      expect(sut.sessions()).toEqual([]);
      expect(sut.total).toBe(0);
    });

    it('finds an entry by message id', async () => {
      const wanted = journaledEntry('s1', 'wanted');

      await sut.withSession('s1', async (backlog) => {
        backlog.push([journaledEntry('s1', 'other'), wanted]);

        expect(backlog.find(wanted.record.id)).toBe(wanted);
        expect(backlog.find('no-such-id')).toBeUndefined();
      });
    });

    it('keeps each session apart', async () => {
      await sut.withSession('s1', async (backlog) => backlog.push([journaledEntry('s1', 'a')]));
      await sut.withSession('s2', async (backlog) =>
        backlog.push([journaledEntry('s2', 'b'), journaledEntry('s2', 'c')]),
      );

      await sut.withSession('s1', async (backlog) => {
        expect(contentsOf(backlog.peek(10))).toEqual(['a']);
      });
      expect(sut.size('s2')).toBe(2);
      expect(sut.total).toBe(3);
      expect(sut.sessions()).toEqual(['s1', 's2']);
    });
  });

  describe('entries held in memory only', () => {
    it('are listed, and counted apart from the journaled ones across sessions', async () => {
      await sut.withSession('s1', async (backlog) => {
        backlog.push([
          bufferedEntry('s1', 'a'),
          journaledEntry('s1', 'b'),
          bufferedEntry('s1', 'c'),
        ]);

        expect(contentsOf(backlog.buffered())).toEqual(['a', 'c']);
      });
      await sut.withSession('s2', async (backlog) => backlog.push([bufferedEntry('s2', 'd')]));

      expect(sut.total).toBe(4);
      expect(sut.totalBuffered).toBe(3);
    });

    it('stop counting as buffered once shifted out', async () => {
      await sut.withSession('s1', async (backlog) => {
        backlog.push([
          bufferedEntry('s1', 'a'),
          journaledEntry('s1', 'b'),
          bufferedEntry('s1', 'c'),
        ]);

        backlog.shift(2);
      });

      expect(sut.total).toBe(1);
      expect(sut.totalBuffered).toBe(1);
    });

    it('become journaled at a location, staying in their place', async () => {
      const location = { segment: 'segment-9', offset: 40, length: 12 };

      await sut.withSession('s1', async (backlog) => {
        const [first, second] = [bufferedEntry('s1', 'a'), bufferedEntry('s1', 'b')];
        backlog.push([first, second]);

        backlog.journaled(first, location);

        expect(first.location).toBe(location);
        expect(contentsOf(backlog.buffered())).toEqual(['b']);
        expect(contentsOf(backlog.peek(10))).toEqual(['a', 'b']);
      });
      expect(sut.totalBuffered).toBe(1);
      expect(sut.total).toBe(2);
    });

    it('are not counted twice when an entry journaled already is reported again', async () => {
      const location = { segment: 'segment-9', offset: 40, length: 12 };

      await sut.withSession('s1', async (backlog) => {
        const [journaled, buffered] = [journaledEntry('s1', 'a'), bufferedEntry('s1', 'b')];
        backlog.push([journaled, buffered]);

        backlog.journaled(journaled, location);

        expect(journaled.location).toEqual(LOCATION);
      });
      expect(sut.totalBuffered).toBe(1);
    });

    it('ignore an entry that is no longer in the backlog', async () => {
      const location = { segment: 'segment-9', offset: 40, length: 12 };

      await sut.withSession('s1', async (backlog) => {
        const [gone, kept] = [bufferedEntry('s1', 'a'), bufferedEntry('s1', 'b')];
        backlog.push([gone, kept]);
        backlog.shift(1);

        backlog.journaled(gone, location);

        expect(gone.location).toBeNull();
      });
      expect(sut.totalBuffered).toBe(1);
    });
  });

  describe('the lock rule', () => {
    it('hands back what the work returns, and its rejection', async () => {
      const failure = new Error('work failed');

      await expect(sut.withSession('s1', async () => 42)).resolves.toBe(42);
      await expect(
        sut.withSession('s1', async () => {
          throw failure;
        }),
      ).rejects.toBe(failure);
    });

    it('makes the backlog handle unusable once the lock is let go', async () => {
      let kept: Backlog | undefined;
      await sut.withSession('s1', async (backlog) => {
        backlog.push([journaledEntry('s1', 'a')]);
        kept = backlog;
      });
      const handle = kept as Backlog;
      const closed = 'the lock of session s1 is no longer held';

      expect(() => handle.size).toThrow(closed);
      expect(() => handle.push([journaledEntry('s1', 'b')])).toThrow(closed);
      expect(() => handle.peek(1)).toThrow(closed);
      expect(() => handle.shift(1)).toThrow(closed);
      expect(() => handle.find('x')).toThrow(closed);
      expect(() => handle.buffered()).toThrow(closed);
      expect(() => handle.journaled(bufferedEntry('s1', 'c'), LOCATION)).toThrow(closed);
      expect(sut.size('s1')).toBe(1);
      expect(sut.total).toBe(1);
    });

    it('closes the handle also when the work fails', async () => {
      let kept: Backlog | undefined;

      await sut
        .withSession('s1', async (backlog) => {
          kept = backlog;
          throw new Error('work failed');
        })
        .catch(() => undefined);

      expect(() => (kept as Backlog).size).toThrow('no longer held');
    });

    it('runs two calls for one session one after the other, in call order', async () => {
      const firstMayFinish = deferred();
      const firstStarted = deferred();
      const events: string[] = [];

      const first = sut.withSession('s1', async (backlog) => {
        events.push('first start');
        firstStarted.resolve();
        await firstMayFinish.promise;
        backlog.push([journaledEntry('s1', 'from first')]);
        events.push('first end');
      });
      const second = sut.withSession('s1', async (backlog) => {
        events.push(`second start, sees ${contentsOf(backlog.peek(10)).join()}`);
      });
      await firstStarted.promise;
      expect(events).toEqual(['first start']);

      firstMayFinish.resolve();
      await Promise.all([first, second]);

      expect(events).toEqual(['first start', 'first end', 'second start, sees from first']);
    });

    it('does not make another session wait', async () => {
      const held = deferred();
      const started = deferred();
      const blocking = sut.withSession('s1', async () => {
        started.resolve();
        await held.promise;
      });
      await started.promise;

      const other = await sut.withSession('s2', async (backlog) => {
        backlog.push([journaledEntry('s2', 'b')]);
        return 'done while s1 is held';
      });

      expect(other).toBe('done while s1 is held');
      held.resolve();
      await blocking;
    });
  });
});
