import { splitRefused } from './outcomes.js';
import { acceptedRecord } from './testing/message-record.fixture.js';

describe(splitRefused.name, () => {
  const [a, b, c, d] = ['a', 'b', 'c', 'd'].map((content) => acceptedRecord('s', content));
  const entries = [a, b, c, d].map((record, index) => ({ record, location: index }));

  it('pairs the refused entries with their reasons and keeps the others, both in order', () => {
    const split = splitRefused(entries, [
      { record: d, reason: 'too long' },
      { record: b, reason: 'bad value' },
    ]);

    expect(split).toEqual({
      refused: [
        { record: b, location: 1, reason: 'bad value' },
        { record: d, location: 3, reason: 'too long' },
      ],
      kept: [
        { record: a, location: 0 },
        { record: c, location: 2 },
      ],
    });
  });

  it('counts an entry refused with an empty reason as refused', () => {
    expect(splitRefused(entries.slice(0, 2), [{ record: a, reason: '' }])).toEqual({
      refused: [{ record: a, location: 0, reason: '' }],
      kept: [{ record: b, location: 1 }],
    });
  });

  it('keeps everything when nothing was refused', () => {
    expect(splitRefused(entries, [])).toEqual({ refused: [], kept: entries });
  });
});
