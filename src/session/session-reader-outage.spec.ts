import { EventEmitter2 } from '@nestjs/event-emitter';
import { ScribeErrorCode } from '../common/errors/scribe-error-code.js';
import { ScribeConfig } from '../config/scribe-config.js';
import { DatabaseNotReadyError } from '../database/database-readiness.js';
import { type SessionListQueries } from '../database/session-list-queries.js';
import { type SessionQueries } from '../database/session-queries.js';
import { type SessionUpdates } from '../database/session-updates.js';
import { AppendStatus } from '../message/append-status.js';
import { type HeldMessages } from '../message/held-messages.js';
import { acceptedRecord } from '../message/testing/message-record.fixture.js';
import { SessionReader } from './session-reader.js';
import { newReader } from './testing/new-reader.js';

// What the database driver throws when PostgreSQL cannot be reached.
const lost = () =>
  Promise.reject(
    Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }),
  );
const unavailable = expect.objectContaining({
  code: ScribeErrorCode.DatabaseUnavailable,
  reason: 'connect ECONNREFUSED 127.0.0.1:5432',
});
const request = { direction: 'forward' as const, count: 5 };
const held = [{ record: acceptedRecord('s', 'held'), status: AppendStatus.QUEUED as const }];

/** A reader over a database every read of which fails, as during an outage. */
function readerOverOutage(cacheSize = '0') {
  const queries = {
    loadFull: lost,
    findMetadata: lost,
    pageOfMessages: lost,
  } as unknown as SessionQueries;
  const lists = {
    listSessions: lost,
    countSessions: lost,
    anySessionAtOrBefore: lost,
  } as unknown as SessionListQueries;
  const pending = {
    of: () => held,
    journalOnly: () => Promise.resolve({ messages: [], beyondCursor: false, total: 0 }),
    atOneMoment: (_id: string, read: () => Promise<unknown>) => read(),
  } as unknown as HeldMessages;
  return newReader(
    queries,
    ScribeConfig.fromVariables({ SESSION_CACHE_SIZE: cacheSize }),
    new EventEmitter2(),
    pending,
    {} as SessionUpdates,
    lists,
  );
}

describe(`${SessionReader.name} during a database outage`, () => {
  const position = { updatedAt: 1, id: 'a' };

  it.each([
    ['metadata', (sut: SessionReader) => sut.metadata('s')],
    ['full', (sut: SessionReader) => sut.full('s')],
    ['full, for a request', (sut: SessionReader) => sut.full('s', undefined, {})],
    ['list', (sut: SessionReader) => sut.list(5, undefined, {})],
    ['count', (sut: SessionReader) => sut.count()],
    ['anySessionAtOrBefore', (sut: SessionReader) => sut.anySessionAtOrBefore(position)],
    ['messagePage', (sut: SessionReader) => sut.messagePage('s', request)],
    ['heldWithJournal', (sut: SessionReader) => sut.heldWithJournal('s', request)],
  ])('%s answers DATABASE_UNAVAILABLE, not a fault', async (_name, read) => {
    await expect(read(readerOverOutage())).rejects.toEqual(unavailable);
  });

  it('answers DATABASE_UNAVAILABLE for a cached session whose revalidation fails', async () => {
    let down = false;
    const session = { id: 's', revision: 1, messageCount: 0 };
    const queries = {
      loadFull: () => Promise.resolve({ session, messages: [], bytes: 1, complete: true }),
      findMetadata: () => (down ? lost() : Promise.resolve(session)),
    } as unknown as SessionQueries;
    const sut = newReader(
      queries,
      ScribeConfig.fromVariables({ SESSION_CACHE_SIZE: '10' }),
      new EventEmitter2(),
      {} as HeldMessages,
      {} as SessionUpdates,
      {} as SessionListQueries,
    );
    await sut.full('s');
    expect(sut.gateStatus().cacheSize).toBe(1);
    down = true;

    await expect(sut.full('s')).rejects.toEqual(unavailable);
  });

  it('answers DATABASE_UNAVAILABLE for an update the database could not take, and uncaches', async () => {
    const session = { id: 's', revision: 1, messageCount: 0 };
    const queries = {
      loadFull: () => Promise.resolve({ session, messages: [], bytes: 1, complete: true }),
      findMetadata: () => Promise.resolve(session),
    } as unknown as SessionQueries;
    const events = new EventEmitter2();
    const changed: unknown[] = [];
    events.onAny((name) => changed.push(name));
    const sut = newReader(
      queries,
      ScribeConfig.fromVariables({ SESSION_CACHE_SIZE: '10' }),
      events,
      {} as HeldMessages,
      { updateSession: lost } as unknown as SessionUpdates,
      {} as SessionListQueries,
    );
    await sut.full('s');

    await expect(sut.update('s', { title: 't' })).rejects.toEqual(
      expect.objectContaining({
        code: ScribeErrorCode.DatabaseUnavailable,
        reason: 'connect ECONNREFUSED 127.0.0.1:5432',
        message:
          'The database cannot be reached now, so session "s" was not updated (unless the connection dropped as it committed: read its revision, or retry with expectedRevision)',
      }),
    );
    expect(sut.gateStatus().cacheSize).toBe(0);
    expect(changed).toEqual([]);
  });

  it('still answers what memory holds', () => {
    expect(readerOverOutage().heldOf('s')).toEqual(held);
  });

  it('passes a not-ready database on as it is', async () => {
    const notReady = new DatabaseNotReadyError('starting');
    const sut = newReader(
      { findMetadata: () => Promise.reject(notReady) } as unknown as SessionQueries,
      ScribeConfig.fromVariables({}),
      new EventEmitter2(),
      {} as HeldMessages,
      {} as SessionUpdates,
      {} as SessionListQueries,
    );

    await expect(sut.metadata('s')).rejects.toBe(notReady);
  });
});
