import { acceptedRecord } from '../message/testing/message-record.fixture.js';
import { formatOrderKey } from '../message/order-key.js';
import { type Statement } from './sql-dialect.js';
import { placeAfterStored, storedKeysOf, withStoredKeys } from './stored-order.js';
import { type StatementRunner } from './statement-runner.js';

const MAX = formatOrderKey(5000, 7, 'other');

/** Answers the max statement with `maxima`, and keeps what it was asked. */
function runnerWith(
  maxima: Record<string, string | null>,
): StatementRunner & { asked: Statement[] } {
  const asked: Statement[] = [];
  return {
    asked,
    rows: (statement) => {
      asked.push(statement);
      return Promise.resolve(
        (statement.values as string[]).flatMap((id) =>
          id in maxima ? [{ session_id: id, max_key: maxima[id] }] : [],
        ),
      );
    },
    changes: () => Promise.reject(new Error('no changes expected')),
  };
}

describe(placeAfterStored.name, () => {
  it('moves the records of an append any of whose keys is at or before the max, wherever it stands', async () => {
    const late = acceptedRecord('s', 'late', { orderKey: formatOrderKey(6000, 0, 'b0b') });
    const early = acceptedRecord('s', 'early', { orderKey: MAX });
    const run = runnerWith({ s: MAX });

    const keys = await placeAfterStored(
      run,
      'postgres',
      [{ sessionId: 's', records: [late, early], after: 'stored' }],
      'b0b',
    );

    expect([...keys]).toEqual([
      [late, formatOrderKey(5000, 8, 'b0br')],
      [early, formatOrderKey(5000, 9, 'b0br')],
    ]);
    expect(run.asked).toEqual([
      {
        sql: 'SELECT "id" AS "session_id", (SELECT MAX("order_key") FROM "messages" WHERE "messages"."session_id" = "sessions"."id") AS "max_key" FROM "sessions" WHERE "id" IN ($1)',
        values: ['s'],
      },
    ]);
  });

  it('asks nothing for a group without an answered append, nor for one without records', async () => {
    const run = runnerWith({ s: MAX });
    const record = acceptedRecord('s', 'queued', { orderKey: formatOrderKey(1, 0, 'b0b') });

    const keys = await placeAfterStored(
      run,
      'sqlite',
      [
        { sessionId: 's', records: [record] },
        { sessionId: 't', records: [], after: 'stored' },
      ],
      'b0b',
    );

    expect(keys.size).toBe(0);
    expect(run.asked).toEqual([]);
  });

  it('asks for each session once, in id order, and ignores a max that is not a key', async () => {
    const run = runnerWith({ a: null, b: MAX });
    const a = acceptedRecord('a', 'a', { orderKey: formatOrderKey(1, 0, 'b0b') });
    const b = acceptedRecord('b', 'b', { orderKey: formatOrderKey(1, 0, 'b0b') });

    const keys = await placeAfterStored(
      run,
      'sqlite',
      [
        { sessionId: 'b', records: [b], after: 'stored' },
        { sessionId: 'a', records: [a], after: 'stored' },
        { sessionId: 'b', records: [], after: 'stored' },
      ],
      'b0b',
    );

    expect(run.asked.map((statement) => statement.values)).toEqual([['a', 'b']]);
    expect(run.asked[0].sql).toContain('IN (?, ?)');
    expect([...keys]).toEqual([[b, formatOrderKey(5000, 8, 'b0br')]]);
  });

  it('keeps the keys of an append strictly after the max', async () => {
    const record = acceptedRecord('s', 'after', { orderKey: formatOrderKey(5000, 8, 'b0b') });

    const keys = await placeAfterStored(
      runnerWith({ s: MAX }),
      'sqlite',
      [{ sessionId: 's', records: [record], after: 'stored' }],
      'b0b',
    );

    expect(keys.size).toBe(0);
  });
});

describe(withStoredKeys.name, () => {
  it('inserts copies of the moved records only, leaving the originals as accepted', () => {
    const [a, b] = [acceptedRecord('s', 'a'), acceptedRecord('s', 'b')];
    const keyOfA = a.orderKey;

    const inserted = withStoredKeys([a, b], new Map([[a, 'moved']]));

    expect(inserted[0]).toEqual({ ...a, orderKey: 'moved' });
    expect(inserted[1]).toBe(b);
    expect(a.orderKey).toBe(keyOfA);
  });

  it('hands back the records themselves when nothing moved', () => {
    const records = [acceptedRecord('s', 'a')];

    expect(withStoredKeys(records, new Map())).toBe(records);
  });
});

describe(storedKeysOf.name, () => {
  const [a, b] = [acceptedRecord('s', 'a'), acceptedRecord('s', 'b')];

  it("lists the inserted records' stored keys when the write moved any", () => {
    expect(storedKeysOf({ sessionId: 's', records: [a, b] }, [b], new Map([[b, 'k-b']]))).toEqual([
      'k-b',
    ]);
    expect(
      storedKeysOf({ sessionId: 's', records: [a, b] }, [a, b], new Map([[b, 'k-b']])),
    ).toEqual([a.orderKey, 'k-b']);
  });

  it('lists nothing for a write none of whose records moved', () => {
    expect(storedKeysOf({ sessionId: 's', records: [a] }, [a], new Map([[b, 'k-b']]))).toBe(
      undefined,
    );
  });
});
