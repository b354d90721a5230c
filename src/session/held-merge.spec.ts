import { pageOfList, type Page, type PageRequest } from '../common/pagination/page-request.js';
import { AppendStatus } from '../message/append-status.js';
import { type MessageRecord } from '../message/message-record.js';
import { MessageRole } from '../message/message-role.js';
import { formatOrderKey } from '../message/order-key.js';
import { type HeldMessage } from '../message/held-messages.js';
import { withHeld, type ListedMessage } from './held-merge.js';

const ACCEPTED_AT = 1_764_460_800_000;

/** The `sequence`-th message of the session: id `m<sequence>`, its key sorting by sequence. */
function message(sequence: number): MessageRecord {
  return {
    id: `m${sequence}`,
    sessionId: 's',
    orderKey: formatOrderKey(ACCEPTED_AT + sequence, 0, 'f1x7e5a1'),
    role: MessageRole.USER,
    content: `message ${sequence}`,
    clientMessageId: null,
    toolName: null,
    toolCallId: null,
    toolCalls: null,
    metadata: null,
    acceptedAt: ACCEPTED_AT + sequence,
  };
}

const m = Array.from({ length: 10 }, (_, sequence) => message(sequence));

const persisted = (record: MessageRecord): ListedMessage => ({
  record,
  status: AppendStatus.PERSISTED,
});
const queued = (record: MessageRecord): HeldMessage => ({
  record,
  status: AppendStatus.QUEUED,
});
const buffered = (record: MessageRecord): HeldMessage => ({
  record,
  status: AppendStatus.BUFFERED,
});

/** A page of stored messages, with Relay's flags (none set unless given). */
function storedPage(
  items: MessageRecord[],
  flags: { hasNextPage?: boolean; hasPreviousPage?: boolean } = {},
): Page<MessageRecord> {
  return { items, hasNextPage: false, hasPreviousPage: false, ...flags };
}

/** `first: count` (after and before as messages, their keys the cursors). */
function first(
  count: number,
  bounds: { after?: MessageRecord; before?: MessageRecord } = {},
): PageRequest<string> {
  return {
    direction: 'forward',
    count,
    after: bounds.after?.orderKey,
    before: bounds.before?.orderKey,
  };
}

/** `last: count`. */
function last(
  count: number,
  bounds: { after?: MessageRecord; before?: MessageRecord } = {},
): PageRequest<string> {
  return { ...first(count, bounds), direction: 'backward' };
}

describe(withHeld.name, () => {
  describe('with no pending message in the window', () => {
    it('lists the stored page as persisted, keeping its flags, forward', () => {
      const page = storedPage([m[1], m[2]], { hasNextPage: true, hasPreviousPage: true });

      expect(withHeld(page, first(2, { after: m[0] }), [])).toEqual({
        items: [persisted(m[1]), persisted(m[2])],
        hasNextPage: true,
        hasPreviousPage: true,
      });
    });

    it('lists the stored page as persisted, keeping its flags, backward', () => {
      const page = storedPage([m[1], m[2]], { hasNextPage: true, hasPreviousPage: true });

      expect(withHeld(page, last(2, { before: m[3] }), [])).toEqual({
        items: [persisted(m[1]), persisted(m[2])],
        hasNextPage: true,
        hasPreviousPage: true,
      });
    });

    it('lists an empty page as it is', () => {
      expect(withHeld(storedPage([]), first(5), [])).toEqual({
        items: [],
        hasNextPage: false,
        hasPreviousPage: false,
      });
    });
  });

  describe('forward (first / after)', () => {
    it('puts pending messages in their accepted places among the stored ones, with their status', () => {
      const page = storedPage([m[1], m[3], m[5]]);

      expect(withHeld(page, first(10), [queued(m[2]), buffered(m[4]), queued(m[6])])).toEqual({
        items: [
          persisted(m[1]),
          queued(m[2]),
          persisted(m[3]),
          buffered(m[4]),
          persisted(m[5]),
          queued(m[6]),
        ],
        hasNextPage: false,
        hasPreviousPage: false,
      });
    });

    it('puts a pending message before the first stored one', () => {
      expect(withHeld(storedPage([m[2]]), first(10), [queued(m[1])]).items).toEqual([
        queued(m[1]),
        persisted(m[2]),
      ]);
    });

    it('lists pending messages alone on a page where nothing is stored', () => {
      expect(withHeld(storedPage([]), first(10), [queued(m[1]), buffered(m[2])])).toEqual({
        items: [queued(m[1]), buffered(m[2])],
        hasNextPage: false,
        hasPreviousPage: false,
      });
    });

    it('keeps out the pending message at its cursor, and says that it precedes the page', () => {
      // The previous page ended with m3, still pending: nothing stored precedes this page.
      const page = storedPage([m[4]]);

      expect(withHeld(page, first(10, { after: m[3] }), [queued(m[3]), queued(m[5])])).toEqual({
        items: [persisted(m[4]), queued(m[5])],
        hasNextPage: false,
        hasPreviousPage: true,
      });
    });

    it('says that pending messages before its cursor precede the page', () => {
      const page = storedPage([m[4]]);

      expect(withHeld(page, first(10, { after: m[3] }), [buffered(m[1])])).toEqual({
        items: [persisted(m[4])],
        hasNextPage: false,
        hasPreviousPage: true,
      });
    });

    it('does not take pending messages after its cursor for ones that precede it', () => {
      const page = storedPage([m[4]]);

      expect(withHeld(page, first(10, { after: m[3] }), [queued(m[5])])).toEqual({
        items: [persisted(m[4]), queued(m[5])],
        hasNextPage: false,
        hasPreviousPage: false,
      });
    });

    it('keeps out pending messages at or past `before`, without a flag for them', () => {
      const page = storedPage([m[2], m[3]]);

      expect(
        withHeld(page, first(10, { before: m[5] }), [queued(m[4]), queued(m[5]), queued(m[6])]),
      ).toEqual({
        items: [persisted(m[2]), persisted(m[3]), queued(m[4])],
        hasNextPage: false,
        hasPreviousPage: false,
      });
    });

    it('while more is stored, leaves pending messages past the last stored one to a later page', () => {
      const page = storedPage([m[1], m[3]], { hasNextPage: true });

      expect(withHeld(page, first(5), [queued(m[2]), queued(m[4])])).toEqual({
        items: [persisted(m[1]), queued(m[2]), persisted(m[3])],
        hasNextPage: true,
        hasPreviousPage: false,
      });
    });

    it('with nothing more stored, takes the pending messages past the last stored one', () => {
      const page = storedPage([m[1], m[3]], { hasPreviousPage: true });

      expect(withHeld(page, first(5), [queued(m[2]), queued(m[4]), buffered(m[5])])).toEqual({
        items: [persisted(m[1]), queued(m[2]), persisted(m[3]), queued(m[4]), buffered(m[5])],
        hasNextPage: false,
        hasPreviousPage: true,
      });
    });

    it('trims a page merged past `count` at its far end, and says that more follow', () => {
      const page = storedPage([m[1], m[3], m[5]], { hasPreviousPage: true });

      expect(withHeld(page, first(3, { after: m[0] }), [queued(m[2]), queued(m[4])])).toEqual({
        items: [persisted(m[1]), queued(m[2]), persisted(m[3])],
        hasNextPage: true,
        hasPreviousPage: true,
      });
    });

    it('fills a page to exactly `count` without trimming it or saying that more follow', () => {
      const page = storedPage([m[1], m[3], m[4]]);

      expect(withHeld(page, first(4), [queued(m[2])])).toEqual({
        items: [persisted(m[1]), queued(m[2]), persisted(m[3]), persisted(m[4])],
        hasNextPage: false,
        hasPreviousPage: false,
      });
    });
  });

  describe('backward (last / before)', () => {
    it('puts pending messages in their accepted places, oldest first', () => {
      const page = storedPage([m[2], m[4]]);

      expect(withHeld(page, last(10), [queued(m[1]), buffered(m[3]), queued(m[5])])).toEqual({
        items: [queued(m[1]), persisted(m[2]), buffered(m[3]), persisted(m[4]), queued(m[5])],
        hasNextPage: false,
        hasPreviousPage: false,
      });
    });

    it('keeps out the pending message at its cursor, and says that it follows the page', () => {
      // The previous (newer) page began with m5, still pending: nothing stored follows this one.
      const page = storedPage([m[3], m[4]]);

      expect(withHeld(page, last(10, { before: m[5] }), [queued(m[2]), queued(m[5])])).toEqual({
        items: [queued(m[2]), persisted(m[3]), persisted(m[4])],
        hasNextPage: true,
        hasPreviousPage: false,
      });
    });

    it('says that pending messages past its cursor follow the page', () => {
      const page = storedPage([m[3]]);

      expect(withHeld(page, last(10, { before: m[4] }), [buffered(m[7])])).toEqual({
        items: [persisted(m[3])],
        hasNextPage: true,
        hasPreviousPage: false,
      });
    });

    it('does not take pending messages before its cursor for ones that follow it', () => {
      const page = storedPage([m[3]]);

      expect(withHeld(page, last(10, { before: m[4] }), [queued(m[2])])).toEqual({
        items: [queued(m[2]), persisted(m[3])],
        hasNextPage: false,
        hasPreviousPage: false,
      });
    });

    it('keeps out pending messages at or before `after`, without a flag for them', () => {
      const page = storedPage([m[2], m[3]]);

      expect(withHeld(page, last(10, { after: m[1] }), [queued(m[0]), queued(m[1])])).toEqual({
        items: [persisted(m[2]), persisted(m[3])],
        hasNextPage: false,
        hasPreviousPage: false,
      });
    });

    it('while more is stored before it, leaves pending messages before the first stored one to an earlier page', () => {
      const page = storedPage([m[3], m[5]], { hasPreviousPage: true });

      expect(withHeld(page, last(5), [queued(m[2]), queued(m[4])])).toEqual({
        items: [persisted(m[3]), queued(m[4]), persisted(m[5])],
        hasNextPage: false,
        hasPreviousPage: true,
      });
    });

    it('with nothing more stored before it, takes the pending messages before the first stored one', () => {
      const page = storedPage([m[3], m[5]], { hasNextPage: true });

      expect(
        withHeld(page, last(5, { before: m[6] }), [buffered(m[1]), queued(m[2]), queued(m[4])]),
      ).toEqual({
        items: [buffered(m[1]), queued(m[2]), persisted(m[3]), queued(m[4]), persisted(m[5])],
        hasNextPage: true,
        hasPreviousPage: false,
      });
    });

    it('trims a page merged past `count` at its oldest end, and says that more precede', () => {
      const page = storedPage([m[2], m[4]], { hasNextPage: true });

      expect(
        withHeld(page, last(3, { before: m[6] }), [queued(m[1]), queued(m[3]), queued(m[5])]),
      ).toEqual({
        items: [queued(m[3]), persisted(m[4]), queued(m[5])],
        hasNextPage: true,
        hasPreviousPage: true,
      });
    });

    it('fills a page to exactly `count` without trimming it or saying that more precede', () => {
      const page = storedPage([m[2], m[4]]);

      expect(withHeld(page, last(3), [queued(m[3])])).toEqual({
        items: [persisted(m[2]), queued(m[3]), persisted(m[4])],
        hasNextPage: false,
        hasPreviousPage: false,
      });
    });
  });

  describe('a pending message the page holds already (stored meanwhile)', () => {
    it('is listed once, as persisted', () => {
      const page = storedPage([m[1], m[2], m[3]]);

      expect(withHeld(page, first(10), [queued(m[2]), queued(m[4])])).toEqual({
        items: [persisted(m[1]), persisted(m[2]), persisted(m[3]), queued(m[4])],
        hasNextPage: false,
        hasPreviousPage: false,
      });
    });

    it('does not count twice towards `count`', () => {
      const page = storedPage([m[1], m[2], m[3]]);

      expect(withHeld(page, first(3), [buffered(m[3])])).toEqual({
        items: [persisted(m[1]), persisted(m[2]), persisted(m[3])],
        hasNextPage: false,
        hasPreviousPage: false,
      });
      expect(withHeld(page, last(3), [buffered(m[1])])).toEqual({
        items: [persisted(m[1]), persisted(m[2]), persisted(m[3])],
        hasNextPage: false,
        hasPreviousPage: false,
      });
    });
  });

  describe('paging the merged view page by page (property, seeded)', () => {
    // Each seed is a stored list and a pending set; a failure names its seed to replay it.
    const SEEDS = Array.from({ length: 200 }, (_, index) => index + 1);

    it('forward: every message of stored and pending once, in key order, from every cursor', () => {
      const failures: unknown[] = [];
      for (const seed of SEEDS) checkWalk(seed, forwardWalk, failures);

      // The first failing case in full (its seed replays it); then how many there were.
      expect(failures.slice(0, 1)).toEqual([]);
      expect(failures).toHaveLength(0);
    });

    it('backward: every message of stored and pending once, in key order, from every cursor', () => {
      const failures: unknown[] = [];
      for (const seed of SEEDS) checkWalk(seed, backwardWalk, failures);

      expect(failures.slice(0, 1)).toEqual([]);
      expect(failures).toHaveLength(0);
    });
  });
});

/** Mulberry32: a small seeded generator, so that a failing case comes back from its seed. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Scenario {
  /** What the database holds, in key order. */
  stored: MessageRecord[];
  /** What this instance holds, oldest first; some of them stored meanwhile. */
  pending: HeldMessage[];
  /** Every message of the session once, in key order, as a reader should see it. */
  union: ListedMessage[];
  /** The cursors tried: none, a key before every message, and every key (gaps included). */
  cursors: (string | undefined)[];
  sizeOf: (record: MessageRecord) => number;
  maxBytes: number;
}

function scenario(seed: number): Scenario {
  const random = seeded(seed);
  const pick = <T>(choices: readonly T[]): T => choices[Math.floor(random() * choices.length)];
  const universe = Array.from({ length: Math.floor(random() * 11) }, (_, sequence) =>
    message(sequence + 1),
  );
  const stored: MessageRecord[] = [];
  const pending: HeldMessage[] = [];
  const union: ListedMessage[] = [];
  for (const record of universe) {
    // Neither (a gap in the keys), stored, pending, or pending and stored meanwhile.
    const fate = pick(['gap', 'stored', 'stored', 'pending', 'pending', 'both'] as const);
    if (fate === 'gap') continue;
    const status = pick([AppendStatus.QUEUED, AppendStatus.BUFFERED] as const);
    if (fate !== 'pending') stored.push(record);
    if (fate !== 'stored') pending.push({ record, status });
    union.push({ record, status: fate === 'pending' ? status : AppendStatus.PERSISTED });
  }
  const sizes = new Map(universe.map((record) => [record.id, 1 + Math.floor(random() * 3)]));
  return {
    stored,
    pending,
    union,
    cursors: [undefined, message(0).orderKey, ...universe.map((record) => record.orderKey)],
    sizeOf: (record) => sizes.get(record.id) ?? 1,
    maxBytes: pick([1, 2, 4, Number.POSITIVE_INFINITY]),
  };
}

/** Which way a walk goes: the request for the next page, and where the page after it starts. */
interface Walk {
  direction: 'forward' | 'backward';
  request(count: number, cursor: string | undefined): PageRequest<string>;
  next(items: ListedMessage[]): string;
  /** A page's items in the order the walk meets them. */
  met(items: ListedMessage[]): ListedMessage[];
  /** The messages a walk from `cursor` must list, in the order it meets them. */
  expected(union: ListedMessage[], cursor: string | undefined): ListedMessage[];
  /** Whether anything lies on the other side of `cursor` (the flag away from the walk). */
  behind(union: ListedMessage[], cursor: string | undefined): boolean;
  ahead(page: Page<ListedMessage>): boolean;
  back(page: Page<ListedMessage>): boolean;
}

const forwardWalk: Walk = {
  direction: 'forward',
  request: (count, after) => ({ direction: 'forward', count, after }),
  next: (items) => items[items.length - 1].record.orderKey,
  met: (items) => items,
  expected: (union, after) =>
    union.filter(({ record }) => after === undefined || record.orderKey > after),
  behind: (union, after) =>
    after !== undefined && union.some(({ record }) => record.orderKey <= after),
  ahead: (page) => page.hasNextPage,
  back: (page) => page.hasPreviousPage,
};

const backwardWalk: Walk = {
  direction: 'backward',
  request: (count, before) => ({ direction: 'backward', count, before }),
  next: (items) => items[0].record.orderKey,
  met: (items) => [...items].reverse(),
  expected: (union, before) =>
    union.filter(({ record }) => before === undefined || record.orderKey < before).reverse(),
  behind: (union, before) =>
    before !== undefined && union.some(({ record }) => record.orderKey >= before),
  ahead: (page) => page.hasPreviousPage,
  back: (page) => page.hasNextPage,
};

/**
 * For every page size and starting cursor, walks the merged view one way, building each stored
 * page from the stored list alone (as the database would) and feeding each page's far key to
 * the next request: every message comes once, in order; no page holds more than `count` and
 * none is empty unless nothing is left; the flag ahead is set on every page but the last; the
 * flag behind says whether anything lies behind the page. Failures go to `failures`, each
 * with what a replay needs.
 */
function checkWalk(seed: number, walk: Walk, failures: unknown[]): void {
  const { stored, pending, union, cursors, sizeOf, maxBytes } = scenario(seed);
  for (let count = 1; count <= union.length + 1; count += 1) {
    for (const start of cursors) {
      const listed: string[] = [];
      const sizes: number[] = [];
      const aheadFlags: boolean[] = [];
      const behindFlags: boolean[] = [];
      let cursor = start;
      // A walk that does not end within this many pages goes round in circles.
      for (let pages = 0; pages <= union.length + 1; pages += 1) {
        const request = walk.request(count, cursor);
        const page = pageOfList(stored, request, (record) => record.orderKey, maxBytes, sizeOf);
        const merged = withHeld(page, request, pending);
        listed.push(...walk.met(merged.items).map(label));
        sizes.push(merged.items.length);
        aheadFlags.push(walk.ahead(merged));
        behindFlags.push(walk.back(merged));
        if (!walk.ahead(merged) || merged.items.length === 0) break;
        cursor = walk.next(merged.items);
      }
      const expected = walk.expected(union, start);
      const actual = {
        listed,
        oversized: sizes.filter((size) => size > count),
        emptyPages: sizes.filter((size) => size === 0).length,
        aheadFlags,
        behindFlags,
      };
      const wanted = {
        listed: expected.map(label),
        oversized: [],
        emptyPages: expected.length === 0 ? 1 : 0,
        aheadFlags: aheadFlags.map((_, page) => page < aheadFlags.length - 1),
        behindFlags: behindFlags.map((_, page) => page > 0 || walk.behind(union, start)),
      };
      if (JSON.stringify(actual) !== JSON.stringify(wanted)) {
        failures.push({ seed, direction: walk.direction, count, start, maxBytes, actual, wanted });
      }
    }
  }
}

function label(message: ListedMessage): string {
  return `${message.record.id}:${message.status}`;
}

describe(`${withHeld.name} with messages read back from the journal`, () => {
  const page = (items: MessageRecord[], flags = {}) => storedPage(items, flags);

  it('ends a forward page before the horizon and says more follow', () => {
    const listed = withHeld(page([m[0], m[1], m[4]]), first(5), [queued(m[2])], {
      horizon: m[3].orderKey,
      beyondCursor: false,
    });

    expect(listed).toEqual({
      items: [persisted(m[0]), persisted(m[1]), queued(m[2])],
      hasNextPage: true,
      hasPreviousPage: false,
    });
  });

  it('ends a backward page after the horizon and says more precede', () => {
    const listed = withHeld(page([m[5]]), last(5), [queued(m[3]), queued(m[4])], {
      horizon: m[2].orderKey,
      beyondCursor: false,
    });

    expect(listed).toEqual({
      items: [queued(m[3]), queued(m[4]), persisted(m[5])],
      hasNextPage: false,
      hasPreviousPage: true,
    });
  });

  it('keeps the message at the horizon off the page even when it is stored by now', () => {
    const listed = withHeld(page([m[1], m[2]]), first(5), [queued(m[1])], {
      horizon: m[2].orderKey,
      beyondCursor: false,
    });

    expect(listed.items).toEqual([persisted(m[1])]);
  });

  it('keeps the message at the horizon off a backward page too', () => {
    const listed = withHeld(page([m[1], m[2]]), last(5), [queued(m[2])], {
      horizon: m[1].orderKey,
      beyondCursor: false,
    });

    expect(listed.items).toEqual([persisted(m[2])]);
  });

  it('lists a message both held and read back once', () => {
    const listed = withHeld(page([]), first(5), [queued(m[1]), queued(m[1]), queued(m[2])]);

    expect(listed.items).toEqual([queued(m[1]), queued(m[2])]);
  });

  it("takes the journal's word that some lie before the cursor, forward", () => {
    const listed = withHeld(page([m[3]]), first(2, { after: m[2] }), [], {
      beyondCursor: true,
    });

    expect(listed).toMatchObject({ hasNextPage: false, hasPreviousPage: true });
  });

  it("takes the journal's word that some lie after the cursor, backward", () => {
    const listed = withHeld(page([m[1]]), last(2, { before: m[2] }), [], {
      beyondCursor: true,
    });

    expect(listed).toMatchObject({ hasNextPage: true, hasPreviousPage: false });
  });

  it('without a horizon or anything beyond the cursor, keeps the flags as they are', () => {
    const listed = withHeld(page([m[1]], { hasNextPage: false }), first(1), [], {
      beyondCursor: false,
    });

    expect(listed).toEqual({
      items: [persisted(m[1])],
      hasNextPage: false,
      hasPreviousPage: false,
    });
  });

  // Stored m0…m2, journal-only m3…m6, held m7…m9: every walk, whatever the page's count and
  // however few journal lines a read may take, lists all ten once, in order, with no empty page.
  const stored = m.slice(0, 3);
  const journalOnly = m.slice(3, 7);
  const held = m.slice(7).map(queued);

  /** What the journal gives a read: the `lines` of the window nearest its cursor. */
  function readBack(request: PageRequest<string>, lines: number) {
    const inside = journalOnly.filter(
      ({ orderKey }) =>
        (request.after === undefined || orderKey > request.after) &&
        (request.before === undefined || orderKey < request.before),
    );
    const forward = request.direction === 'forward';
    const nearest = forward ? inside : [...inside].reverse();
    const taken = nearest.slice(0, Math.min(lines, request.count));
    const beyondCursor = journalOnly.some(({ orderKey }) =>
      forward
        ? request.after !== undefined && orderKey <= request.after
        : request.before !== undefined && orderKey >= request.before,
    );
    return {
      messages: (forward ? taken : taken.reverse()).map(queued),
      horizon: nearest[taken.length]?.orderKey,
      beyondCursor,
    };
  }

  for (const direction of ['forward', 'backward'] as const) {
    for (const count of [1, 2, 3, 4, 11]) {
      for (const lines of [1, 2, 3, 5]) {
        it(`walks ${direction} ${count} at a time, ${lines} journal line(s) a read`, () => {
          const seen: string[] = [];
          let cursor: string | undefined;
          for (let pages = 0; pages < 40; pages += 1) {
            const request: PageRequest<string> =
              direction === 'forward'
                ? { direction, count, after: cursor }
                : { direction, count, before: cursor };
            const fromDatabase = pageOfList(
              stored,
              request,
              (r) => r.orderKey,
              1e9,
              () => 1,
            );
            const journal = readBack(request, lines);
            const listed = withHeld(fromDatabase, request, [...held, ...journal.messages], journal);
            expect(listed.items.length).toBeGreaterThan(0);
            const ids = listed.items.map(({ record }) => record.id);
            if (direction === 'forward') seen.push(...ids);
            else seen.unshift(...ids);
            const more = direction === 'forward' ? listed.hasNextPage : listed.hasPreviousPage;
            const behind = direction === 'forward' ? listed.hasPreviousPage : listed.hasNextPage;
            expect(behind).toBe(pages > 0);
            if (!more) break;
            cursor = (direction === 'forward' ? listed.items.at(-1) : listed.items[0])?.record
              .orderKey;
          }
          expect(seen).toEqual(m.map(({ id }) => id));
        });
      }
    }
  }
});
