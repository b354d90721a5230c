import { changesCarried } from './message-record.js';

describe(changesCarried.name, () => {
  it('carries nothing of a message never changed, whatever else it has', () => {
    expect(changesCarried({})).toEqual({});
    expect(changesCarried({ editedAt: 5, redactionReason: 'x' })).toEqual({});
  });

  it('carries all four fields of a changed message, absent ones as null', () => {
    expect(changesCarried({ revision: 2, editedAt: 7 })).toStrictEqual({
      revision: 2,
      editedAt: 7,
      redactedAt: null,
      redactionReason: null,
    });
    expect(
      changesCarried({ revision: 4, editedAt: null, redactedAt: 9, redactionReason: 'asked' }),
    ).toStrictEqual({ revision: 4, editedAt: null, redactedAt: 9, redactionReason: 'asked' });
  });
});
