import { MessageRole } from '../message/message-role.js';
import { type MessageRecord } from '../message/message-record.js';
import { ID_STORED_ELSEWHERE, StoredElsewhere } from './stored-elsewhere.js';
import { FakeMessageStore } from './testing/fake-message-store.js';
import { FakeSessionQueries } from './testing/fake-session-queries.js';

const record = (id: string, sessionId: string): MessageRecord => ({
  id,
  sessionId,
  orderKey: id,
  role: MessageRole.USER,
  content: id,
  clientMessageId: null,
  toolName: null,
  toolCallId: null,
  toolCalls: null,
  metadata: null,
  acceptedAt: 1,
});

describe(StoredElsewhere.name, () => {
  let store: FakeMessageStore;
  let queries: FakeSessionQueries;
  let sut: StoredElsewhere;

  beforeEach(() => {
    store = new FakeMessageStore();
    queries = new FakeSessionQueries(store);
    sut = new StoredElsewhere(queries.asQueries);
  });

  it("refuses the skipped records whose id is another session's message, in order", async () => {
    const [mine, theirs, gone, alsoTheirs] = ['mine', 'theirs', 'gone', 'also'].map((id) =>
      record(id, 's1'),
    );
    store.storedElsewhere(mine);
    store.storedElsewhere({ ...theirs, sessionId: 's2' });
    store.storedElsewhere({ ...alsoTheirs, sessionId: 's3' });

    expect(await sut.refusals('s1', [mine, theirs, gone, alsoTheirs])).toEqual([
      { record: theirs, reason: ID_STORED_ELSEWHERE },
      { record: alsoTheirs, reason: ID_STORED_ELSEWHERE },
    ]);
    expect(queries.lookedUp).toEqual([['mine', 'theirs', 'gone', 'also']]);
    // What an operator reads in spoolStatus.setAside.
    expect(ID_STORED_ELSEWHERE).toMatch(
      /^its id was stored meanwhile as another session's message/,
    );
  });

  it('reads nothing when nothing was skipped', async () => {
    expect(await sut.refusals('s1', [])).toEqual([]);
    expect(queries.lookups).toBe(0);
  });

  it('cannot tell while the database cannot be read', async () => {
    queries.readError = new Error('connection refused');

    expect(await sut.refusals('s1', [record('theirs', 's1')])).toBeUndefined();
  });
});
