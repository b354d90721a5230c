import { jest } from '@jest/globals';
import { EventEmitter2 } from '@nestjs/event-emitter';
import { ScribeErrorCode } from '../../common/errors/scribe-error-code.js';
import { ScribeException } from '../../common/errors/scribe.exception.js';
import { RecordingFailpoints } from '../../common/testing/recording-failpoints.js';
import { type ScribeConfig } from '../../config/scribe-config.js';
import { DatabaseWriteError } from '../../database/database-errors.js';
import {
  type MessageChange,
  type MessageChanges,
  type MessageEdit,
} from '../../database/message-changes.js';
import { MessageChanged } from '../../message/message-events.js';
import { type MessageRecord } from '../../message/message-record.js';
import { type JournalIndex } from '../../spool/journal-index.js';
import { type SpoolService } from '../../spool/spool.service.js';
import { ACCEPTED_AT, messageRecord } from '../../spool/testing/records.js';
import { SessionBacklog } from '../session-backlog.js';
import { MessageEdits } from './message-edits.js';

// When this instance changes a message (Date.now() during the change).
const NOW = ACCEPTED_AT + 5_000;
const SESSION = 's';
const MAX_MESSAGE_BYTES = 100;

/**
 * The database's side of changes: each call is logged in `log` (shared with the journal and
 * the failpoints, to show their order) and answers what the test scripted, or fails with
 * `failure` when set.
 */
class FakeMessageChanges {
  stored: MessageRecord | undefined = undefined;
  answer: MessageChange = { kind: 'not-found' };
  failure: Error | null = null;
  readonly edits: [string, string, MessageEdit, number | undefined, number, number][] = [];
  readonly redactions: [string, string, string, number][] = [];

  constructor(private readonly log: string[]) {}

  /** This fake where MessageEdits expects the real class (it uses these three calls). */
  get asChanges(): MessageChanges {
    return this as unknown as MessageChanges;
  }

  async find(sessionId: string, id: string): Promise<MessageRecord | undefined> {
    this.log.push(`find ${sessionId} ${id}`);
    await Promise.resolve();
    if (this.failure) throw this.failure;
    return this.stored;
  }

  async edit(
    sessionId: string,
    id: string,
    edit: MessageEdit,
    expectedRevision: number | undefined,
    at: number,
    maxBytes: number,
  ): Promise<MessageChange> {
    this.log.push(`edit ${id}`);
    this.edits.push([sessionId, id, edit, expectedRevision, at, maxBytes]);
    await Promise.resolve();
    if (this.failure) throw this.failure;
    return this.answer;
  }

  async redact(sessionId: string, id: string, reason: string, at: number): Promise<MessageChange> {
    this.log.push(`redact ${id}`);
    this.redactions.push([sessionId, id, reason, at]);
    await Promise.resolve();
    if (this.failure) throw this.failure;
    return this.answer;
  }
}

/** The journal's side: `scrub` (logged), and the journal-only records the index knows of. */
class FakeJournal {
  scrubFailure: unknown = null;
  /** `<session id> <message id>` of each record held on disk only. */
  readonly journalOnly = new Set<string>();

  constructor(private readonly log: string[]) {}

  get asSpool(): SpoolService {
    return this as unknown as SpoolService;
  }

  get asIndex(): JournalIndex {
    return this as unknown as JournalIndex;
  }

  async scrub(ids: readonly string[]): Promise<void> {
    this.log.push(`scrub ${ids.join(' ')}`);
    await Promise.resolve();
    // A failure that is no Error too: what the redaction says of it is checked.
    // eslint-disable-next-line @typescript-eslint/only-throw-error
    if (this.scrubFailure) throw this.scrubFailure;
  }

  findJournalOnly(sessionId: string, id: string): object | undefined {
    return this.journalOnly.has(`${sessionId} ${id}`) ? { sessionId, id } : undefined;
  }
}

const connectionLost = () =>
  Object.assign(new Error('connection refused'), { code: 'ECONNREFUSED' });

/** What `work` was refused with: its code, message and field. */
async function refusal(
  work: Promise<unknown>,
): Promise<{ code: ScribeErrorCode; message: string; field: string | undefined }> {
  try {
    await work;
  } catch (error) {
    expect(error).toBeInstanceOf(ScribeException);
    const { code, message, field } = error as ScribeException;
    return { code, message, field };
  }
  throw new Error('not refused');
}

describe(MessageEdits.name, () => {
  let log: string[];
  let changes: FakeMessageChanges;
  let journal: FakeJournal;
  let backlog: SessionBacklog;
  let events: EventEmitter2;
  let announced: MessageChanged[];
  let sut: MessageEdits;

  const stored = messageRecord(SESSION, 1, { commitSeq: 4 });
  const id = stored.id;
  const edited: MessageRecord = {
    ...stored,
    content: 'new words',
    revision: 2,
    editedAt: NOW,
    changeSeq: 9,
  };
  const tombstone: MessageRecord = {
    ...stored,
    content: '',
    revision: 3,
    redactedAt: NOW,
    redactionReason: 'spam',
    changeSeq: 10,
  };

  function build(armed?: string): void {
    sut = new MessageEdits(
      changes.asChanges,
      backlog,
      journal.asIndex,
      journal.asSpool,
      events,
      new RecordingFailpoints(armed, (name) => log.push(`failpoint ${name}`)),
      { maxMessageBytes: MAX_MESSAGE_BYTES } as ScribeConfig,
    );
  }

  /** `record` held by this instance, in memory or journaled. */
  function hold(record: MessageRecord): Promise<void> {
    return backlog.withSession(record.sessionId, async (queue) => {
      queue.push([{ record, location: null }]);
    });
  }

  beforeEach(() => {
    jest.spyOn(Date, 'now').mockReturnValue(NOW);
    log = [];
    changes = new FakeMessageChanges(log);
    journal = new FakeJournal(log);
    backlog = new SessionBacklog();
    events = new EventEmitter2();
    announced = [];
    events.on(MessageChanged.event, (event: MessageChanged) => announced.push(event));
    build();
  });

  afterEach(() => {
    jest.restoreAllMocks();
  });

  describe('edit', () => {
    it('changes the message now, answers it as the edit left it, and tells the readers', async () => {
      changes.answer = { kind: 'changed', record: edited, sessionRevision: 9 };

      expect(await sut.edit(SESSION, id, { content: 'new words' }, 1)).toBe(edited);

      expect(changes.edits).toEqual([
        [SESSION, id, { content: 'new words' }, 1, NOW, MAX_MESSAGE_BYTES],
      ]);
      expect(announced).toEqual([new MessageChanged(edited, 9)]);
      expect(announced[0]).toBeInstanceOf(MessageChanged);
      expect(log).toEqual([`edit ${id}`]);
    });

    it('hands on no expected revision when none was given', async () => {
      changes.answer = { kind: 'changed', record: edited, sessionRevision: 9 };

      await sut.edit(SESSION, id, { metadata: null }, undefined);

      expect(changes.edits).toEqual([
        [SESSION, id, { metadata: null }, undefined, NOW, MAX_MESSAGE_BYTES],
      ]);
    });

    it('refuses a redacted message with MESSAGE_REDACTED, telling no one', async () => {
      changes.answer = { kind: 'redacted', record: tombstone };

      expect(await refusal(sut.edit(SESSION, id, { content: 'x' }, undefined))).toEqual({
        code: ScribeErrorCode.MessageRedacted,
        message: `input.id: message ${id} was redacted; it has nothing left to edit`,
        field: 'input.id',
      });
      expect(announced).toEqual([]);
    });

    it('refuses a message at another revision with REVISION_CONFLICT, naming both', async () => {
      changes.answer = { kind: 'conflict', record: { ...edited, revision: 3 } };

      expect(await refusal(sut.edit(SESSION, id, { content: 'x' }, 2))).toEqual({
        code: ScribeErrorCode.RevisionConflict,
        message: `input.expectedRevision: message ${id} is at revision 3, not 2; nothing was changed. Read it again and retry.`,
        field: 'input.expectedRevision',
      });
      expect(announced).toEqual([]);
    });

    it('reads a message never changed as at revision 1', async () => {
      changes.answer = { kind: 'conflict', record: stored };

      expect((await refusal(sut.edit(SESSION, id, { content: 'x' }, 4))).message).toBe(
        `input.expectedRevision: message ${id} is at revision 1, not 4; nothing was changed. Read it again and retry.`,
      );
    });

    it('refuses an edit that would leave the message past MAX_MESSAGE_BYTES, telling no one', async () => {
      changes.answer = { kind: 'too-large', bytes: 130 };

      expect(await refusal(sut.edit(SESSION, id, { metadata: { a: 1 } }, undefined))).toEqual({
        code: ScribeErrorCode.BadUserInput,
        message:
          'input: the message would hold 130 bytes of content, toolCalls and metadata together; the limit is 100 bytes (MAX_MESSAGE_BYTES)',
        field: 'input',
      });
      expect(announced).toEqual([]);
    });

    it.each<[string, MessageChange]>([
      ['no such message', { kind: 'not-found' }],
      ['another revision', { kind: 'conflict', record: stored }],
      ['a redacted message', { kind: 'redacted', record: tombstone }],
    ])(
      'tells a caller without read only that nothing was changed, of %s',
      async (_case, answer) => {
        changes.answer = answer;

        const error = (await sut
          .edit(SESSION, id, { content: 'x' }, 2)
          .catch((e) => e)) as ScribeException;

        expect(error.toNonReaders).toBeInstanceOf(ScribeException);
        expect(error.toNonReaders).toMatchObject({
          code: ScribeErrorCode.NotFound,
          message: `input.id: message ${id} of session "s" was not changed: it is not stored, or not at the revision expected`,
          field: 'input.id',
        });
      },
    );

    describe('of no stored message', () => {
      it('answers NOT_FOUND when this instance holds none of that id either', async () => {
        // Held, but another message, or the same id in another session.
        await hold(messageRecord(SESSION, 2));
        await hold({ ...stored, sessionId: 't' });
        journal.journalOnly.add(`t ${id}`);
        journal.journalOnly.add(`${SESSION} other`);

        expect(await refusal(sut.edit(SESSION, id, { content: 'x' }, undefined))).toEqual({
          code: ScribeErrorCode.NotFound,
          message: `input.id: session "s" has no stored message ${id}`,
          field: 'input.id',
        });
        expect(announced).toEqual([]);
      });

      it('answers MESSAGE_HELD for a message this instance holds in memory', async () => {
        await hold(messageRecord(SESSION, 2));
        await hold(stored);
        await hold(messageRecord(SESSION, 3));

        expect(await refusal(sut.edit(SESSION, id, { content: 'x' }, undefined))).toEqual({
          code: ScribeErrorCode.MessageHeld,
          message: `input.id: message ${id} is held by this instance (QUEUED or BUFFERED) and not stored yet; it can be changed once it is PERSISTED`,
          field: 'input.id',
        });
        // Refused before the database is asked: a copy held may be written back as accepted.
        expect(log).toEqual([]);
      });

      it('answers MESSAGE_HELD for a message the journal holds on disk only', async () => {
        journal.journalOnly.add(`${SESSION} ${id}`);

        expect((await refusal(sut.edit(SESSION, id, { content: 'x' }, undefined))).code).toBe(
          ScribeErrorCode.MessageHeld,
        );
        expect(log).toEqual([]);
      });
    });

    describe('when the database fails', () => {
      it('answers DATABASE_UNAVAILABLE for an outage, saying the edit may have been made', async () => {
        changes.failure = connectionLost();

        const error = await sut.edit(SESSION, id, { content: 'x' }, undefined).catch((e) => e);

        expect(error).toBeInstanceOf(DatabaseWriteError);
        expect(error).toMatchObject({
          code: ScribeErrorCode.DatabaseUnavailable,
          message: `The database cannot be reached now, so message ${id} was not edited (unless the connection dropped as it committed: read the message's revision before retrying)`,
          reason: 'ECONNREFUSED: connection refused',
        });
        expect(announced).toEqual([]);
      });

      it('hands on a refusal or a Scribe error as it is', async () => {
        for (const failure of [
          Object.assign(new Error('constraint'), { code: 'SQLITE_CONSTRAINT' }),
          new ScribeException(ScribeErrorCode.DatabaseUnavailable, 'not ready'),
          new TypeError('a bug'),
        ]) {
          changes.failure = failure;
          await expect(sut.edit(SESSION, id, { content: 'x' }, undefined)).rejects.toBe(failure);
        }
      });
    });
  });

  describe('redact', () => {
    beforeEach(() => {
      changes.stored = stored;
      changes.answer = { kind: 'changed', record: tombstone, sessionRevision: 10 };
    });

    it('scrubs the journal first, then redacts the row, and tells the readers', async () => {
      expect(await sut.redact(SESSION, id, 'spam')).toBe(tombstone);

      expect(log).toEqual([
        `find ${SESSION} ${id}`,
        'failpoint redact.before-scrub',
        `scrub ${id}`,
        'failpoint redact.after-scrub',
        `redact ${id}`,
        'failpoint redact.after-commit',
      ]);
      expect(changes.redactions).toEqual([[SESSION, id, 'spam', NOW]]);
      expect(announced).toEqual([new MessageChanged(tombstone, 10)]);
    });

    it('scrubs again on a second redaction, which answers the tombstone and tells no one', async () => {
      changes.stored = tombstone;
      changes.answer = { kind: 'redacted', record: tombstone };

      expect(await sut.redact(SESSION, id, 'again')).toBe(tombstone);

      expect(log).toEqual([
        `find ${SESSION} ${id}`,
        'failpoint redact.before-scrub',
        `scrub ${id}`,
        'failpoint redact.after-scrub',
        `redact ${id}`,
        'failpoint redact.after-commit',
      ]);
      expect(announced).toEqual([]);
    });

    it('scrubs nothing and redacts nothing of a message not stored: MESSAGE_HELD or NOT_FOUND', async () => {
      changes.stored = undefined;

      expect((await refusal(sut.redact(SESSION, id, 'spam'))).code).toBe(ScribeErrorCode.NotFound);
      await hold(stored);
      expect(await refusal(sut.redact(SESSION, id, 'spam'))).toEqual({
        code: ScribeErrorCode.MessageHeld,
        message: `input.id: message ${id} is held by this instance (QUEUED or BUFFERED) and not stored yet; it can be changed once it is PERSISTED`,
        field: 'input.id',
      });
      expect(log).toEqual([`find ${SESSION} ${id}`]);
      expect(announced).toEqual([]);
    });

    it('answers NOT_FOUND for a message deleted between the read and the redaction, telling no one', async () => {
      changes.answer = { kind: 'not-found' };

      expect((await refusal(sut.redact(SESSION, id, 'spam'))).code).toBe(ScribeErrorCode.NotFound);
      expect(announced).toEqual([]);
    });

    it('redacts nothing when the journal cannot be scrubbed: JOURNAL_UNAVAILABLE, naming why', async () => {
      journal.scrubFailure = new Error('EIO: i/o error, write');

      expect(await refusal(sut.redact(SESSION, id, 'spam'))).toEqual({
        code: ScribeErrorCode.JournalUnavailable,
        message: `Message ${id} was not redacted: a copy of it in the local journal could not be removed (EIO: i/o error, write); retry`,
        field: undefined,
      });
      expect(log).toEqual([
        `find ${SESSION} ${id}`,
        'failpoint redact.before-scrub',
        `scrub ${id}`,
      ]);
      expect(changes.redactions).toEqual([]);
      expect(announced).toEqual([]);
    });

    it('names a scrub failure that is no Error as it is', async () => {
      journal.scrubFailure = 'disk gone';

      expect((await refusal(sut.redact(SESSION, id, 'spam'))).message).toBe(
        `Message ${id} was not redacted: a copy of it in the local journal could not be removed (disk gone); retry`,
      );
    });

    it('answers DATABASE_UNAVAILABLE when the message cannot be read, scrubbing nothing', async () => {
      changes.failure = connectionLost();

      const error = await sut.redact(SESSION, id, 'spam').catch((e) => e);

      expect(error).toBeInstanceOf(DatabaseWriteError);
      expect(error).toMatchObject({
        code: ScribeErrorCode.DatabaseUnavailable,
        message: `The database cannot be reached now, so message ${id} was not redacted (unless the connection dropped as it committed: read the message's revision before retrying)`,
      });
      expect(log).toEqual([`find ${SESSION} ${id}`]);
    });

    it('answers DATABASE_UNAVAILABLE when the redaction cannot be committed, after the scrub', async () => {
      const failure = connectionLost();
      changes.redact = async (sessionId, messageId) => {
        log.push(`redact ${messageId}`);
        await Promise.resolve();
        throw failure;
      };

      const error = await sut.redact(SESSION, id, 'spam').catch((e) => e);

      expect(error).toBeInstanceOf(DatabaseWriteError);
      expect(error).toMatchObject({
        code: ScribeErrorCode.DatabaseUnavailable,
        message: `The database cannot be reached now, so message ${id} was not redacted (unless the connection dropped as it committed: read the message's revision before retrying)`,
      });
      expect(log).toEqual([
        `find ${SESSION} ${id}`,
        'failpoint redact.before-scrub',
        `scrub ${id}`,
        'failpoint redact.after-scrub',
        `redact ${id}`,
      ]);
      expect(announced).toEqual([]);
    });
  });
});
