import { ScribeErrorCode } from '../../common/errors/scribe-error-code.js';
import { ScribeException } from '../../common/errors/scribe.exception.js';
import { AppendStatus } from '../../message/append-status.js';
import { MAX_BATCH_MESSAGES } from '../input-rules.js';
import { PartlyImported, type ImportedMessage } from '../transcript-importer.js';
import { type TranscriptService } from '../transcript.service.js';
import { ImportRun } from './import-run.js';
import { ImportTally } from './import-tally.js';

const HEAD = JSON.stringify({
  session: {
    id: 's-1',
    title: null,
    metadata: null,
    createdAt: '2024-01-01T00:00:00.000Z',
    updatedAt: '2024-01-01T00:00:01.000Z',
    messageCount: 1,
    revision: 1,
  },
});
const ID = (index: number) => `0190a5b4-7c1e-7d2a-9b3c-${String(index).padStart(12, '0')}`;
const messageLine = (index: number, content = `m${index}`) =>
  JSON.stringify({
    message: { id: ID(index), role: 'USER', content, createdAt: '2024-01-01T00:00:00.000Z' },
  });

/** The write path as the run sees it: records each batch, refuses a line when told to. */
class FakeTranscripts {
  readonly batches: { ids: string[]; fields: string[]; batchField: string }[] = [];
  refuseId: string | undefined;
  partly = false;

  importRecords(
    _sessionId: string,
    messages: readonly ImportedMessage[],
    fieldOf: (index: number) => string,
    batchField: string,
  ) {
    const refused = messages.findIndex((message) => message.id === this.refuseId);
    if (refused !== -1 && this.partly) {
      const stored = messages.slice(0, refused).map(() => ({
        status: AppendStatus.QUEUED,
        accepted: true,
      }));
      return Promise.reject(new PartlyImported(fieldOf(refused), 'taken elsewhere', stored));
    }
    if (refused !== -1) {
      return Promise.reject(ScribeException.invalidInput(fieldOf(refused), 'refused here'));
    }
    this.batches.push({
      ids: messages.map((message) => message.id),
      fields: messages.map((_message, index) => fieldOf(index)),
      batchField,
    });
    return Promise.resolve(
      messages.map(() => ({ status: AppendStatus.PERSISTED, accepted: true })),
    );
  }
}

async function* body(text: string): AsyncGenerator<Buffer> {
  // In pieces, as a socket hands it over.
  for (let at = 0; at < text.length; at += 7000) yield Buffer.from(text.slice(at, at + 7000));
}

describe(ImportRun.name, () => {
  let transcripts: FakeTranscripts;
  let tally: ImportTally;
  const run = (maxMessageBytes = 1000) =>
    new ImportRun('s-1', transcripts as unknown as TranscriptService, maxMessageBytes, tally);

  beforeEach(() => {
    transcripts = new FakeTranscripts();
    tally = new ImportTally();
  });

  it('returns the session line and stores the messages in batches of at most MAX_BATCH_MESSAGES, naming lines', async () => {
    const count = MAX_BATCH_MESSAGES + 5;
    const lines = [HEAD, ...Array.from({ length: count }, (_, index) => messageLine(index))];

    const head = await run().consume(body(lines.join('\n')));

    expect(head).toMatchObject({ revision: 1, createdAt: Date.UTC(2024, 0, 1) });
    expect(transcripts.batches.map((batch) => batch.ids.length)).toEqual([MAX_BATCH_MESSAGES, 5]);
    expect(transcripts.batches[0].fields.slice(0, 2)).toEqual(['line 2.message', 'line 3.message']);
    expect(transcripts.batches[0].batchField).toBe(`lines 2 to ${MAX_BATCH_MESSAGES + 1}`);
    expect(transcripts.batches.flatMap((batch) => batch.ids)).toEqual(
      Array.from({ length: count }, (_, index) => ID(index)),
    );
    expect(tally.messages).toBe(count);
    expect(tally.lines).toBe(count + 1);
  });

  it('tells a file with an id twice, in another batch, from one without', async () => {
    const lines = [
      HEAD,
      ...Array.from({ length: MAX_BATCH_MESSAGES + 1 }, (_, i) => messageLine(i)),
    ];
    const distinct = run();
    await distinct.consume(body(lines.join('\n')));
    expect(distinct.distinctIds).toBe(true);

    const repeated = run();
    await repeated.consume(body([...lines, messageLine(3)].join('\n')));
    expect(repeated.distinctIds).toBe(false);
  });

  it('tells ids apart that share their last twelve digits', async () => {
    const twin = (variant: string) =>
      JSON.stringify({
        message: {
          id: `0190a5b4-7c1e-7d2a-${variant}-000000000001`,
          role: 'USER',
          content: 'x',
          createdAt: '2024-01-01T00:00:00.000Z',
        },
      });
    const distinct = run();
    await distinct.consume(body([HEAD, twin('9b3c'), twin('8b3c'), twin('9b3d')].join('\n')));
    expect(distinct.distinctIds).toBe(true);
  });

  it('stores the lines before a refused one past the ninth of its batch', async () => {
    transcripts.refuseId = ID(10);
    const lines = [HEAD, ...Array.from({ length: 12 }, (_, index) => messageLine(index))];

    await expect(run().consume(body(lines.join('\n')))).rejects.toMatchObject({
      field: 'line 12.message',
    });
    expect(transcripts.batches.flatMap((batch) => batch.ids)).toEqual(
      Array.from({ length: 10 }, (_, index) => ID(index)),
    );
  });

  it('stores a batch once it holds 4 MiB of lines', async () => {
    const big = 'x'.repeat(300_000);
    const lines = [HEAD, ...Array.from({ length: 16 }, (_, index) => messageLine(index, big))];

    await run(400_000).consume(body(lines.join('\n')));

    // 14 lines of about 300 kB pass 4 MiB.
    expect(transcripts.batches.map((batch) => batch.ids.length)).toEqual([14, 2]);
  });

  it('stores the lines before a bad one, and refuses it by its number', async () => {
    const lines = [HEAD, messageLine(0), messageLine(1), '{"message":', messageLine(3)];

    await expect(run().consume(body(lines.join('\n')))).rejects.toMatchObject({
      code: ScribeErrorCode.BadUserInput,
      field: 'line 4',
    });
    expect(transcripts.batches.flatMap((batch) => batch.ids)).toEqual([ID(0), ID(1)]);
    expect(tally.messages).toBe(2);
  });

  it('stores the part of a batch before the line the write path refuses, none after', async () => {
    transcripts.refuseId = ID(2);
    const lines = [HEAD, ...Array.from({ length: 5 }, (_, index) => messageLine(index))];

    await expect(run().consume(body(lines.join('\n')))).rejects.toMatchObject({
      field: 'line 4.message',
    });
    expect(transcripts.batches.map((batch) => batch.ids)).toEqual([[ID(0), ID(1)]]);
  });

  it('counts a batch stored but for one line as far as that line, and stores it no second time', async () => {
    transcripts.refuseId = ID(2);
    transcripts.partly = true;
    const lines = [HEAD, ...Array.from({ length: 5 }, (_, index) => messageLine(index))];

    await expect(run().consume(body(lines.join('\n')))).rejects.toMatchObject({
      field: 'line 4.message',
    });
    expect(transcripts.batches).toEqual([]);
    expect(tally.messages).toBe(2);
    expect(tally.allPersisted()).toBe(false);
  });

  it('stores nothing of a batch whose first line is refused', async () => {
    transcripts.refuseId = ID(0);
    const lines = [HEAD, messageLine(0), messageLine(1)];

    await expect(run().consume(body(lines.join('\n')))).rejects.toMatchObject({
      field: 'line 2.message',
    });
    expect(transcripts.batches).toEqual([]);
  });

  it('refuses an empty body, or one of blank lines, as having no session line', async () => {
    await expect(run().consume(body('\n\n'))).rejects.toMatchObject({
      field: 'line 1',
      message:
        'line 1: the body is empty: an import is the session ({"session":{…}}), then its messages',
    });
  });

  it('takes a session line with no messages, storing nothing', async () => {
    await expect(run().consume(body(`${HEAD}\n`))).resolves.toMatchObject({ revision: 1 });
    expect(transcripts.batches).toEqual([]);
  });

  it('refuses a line longer than six times the message bound and 64 KiB', async () => {
    const long = messageLine(0, 'x'.repeat(6 * 10 + 64 * 1024));
    await expect(run(10).consume(body(`${HEAD}\n${long}\n`))).rejects.toMatchObject({
      field: 'line 2',
    });
  });
});
