import { ScribeErrorCode } from '../src/common/errors/scribe-error-code.js';
import { createScribeTestingModule, type ScribeTesting } from '../src/kit/index.js';
import { TranscriptService } from '../src/transcript/transcript.service.js';

// A host's own provider calling TranscriptService.append with values no JSON body could hold:
// each is refused with the ScribeError GraphQL gives (BAD_USER_INPUT, the field named), never a
// TypeError, and nothing of the batch is stored. What JSON can carry is taken alike by both.

const APPEND = `mutation ($input: AppendMessagesInput!) {
  appendMessages(input: $input) { status messages { metadata } }
}`;
const READ = `query ($id: ID!) {
  session(id: $id) { messageCount messages(first: 10) { edges { node { content metadata } } } }
}`;

describe("a host's append of values JSON cannot hold", () => {
  let sut: ScribeTesting;
  let transcripts: TranscriptService;

  beforeAll(async () => {
    sut = await createScribeTestingModule();
    transcripts = sut.app.get(TranscriptService);
  });

  afterAll(() => sut?.close());

  async function refusalOf(sessionId: string, metadata: unknown) {
    const error: unknown = await transcripts
      .append(sessionId, [
        { role: 'USER', content: 'fine' },
        { role: 'USER', content: 'hostile', metadata },
      ] as never[])
      .then(
        () => new Error('accepted'),
        (refused: unknown) => refused,
      );
    return error as { code?: string; field?: string; message: string; name: string };
  }

  async function stored(sessionId: string) {
    const answer = await sut.gql(READ, { id: sessionId });
    expect(answer.errors).toBeUndefined();
    return answer.data.session as { messageCount: number } | null;
  }

  const throwing = Object.defineProperty({}, 'n', {
    enumerable: true,
    get: () => {
      throw new TypeError('boom');
    },
  });
  const cyclic: Record<string, unknown> = {};
  cyclic.self = cyclic;

  it.each([
    ['bigint', { n: 1n }, 'input.messages.1.metadata.n'],
    ['getter', throwing, 'input.messages.1.metadata.n'],
    ['cycle', cyclic, 'input.messages.1.metadata.self'],
    ['date', { at: new Date(0) }, 'input.messages.1.metadata.at'],
    [
      'proxy',
      new Proxy(
        {},
        {
          ownKeys: () => {
            throw new Error('trap');
          },
        },
      ),
      'input.messages.1.metadata',
    ],
  ])(
    'refuses a %s, naming its path, and stores nothing of the batch',
    async (name, metadata, field) => {
      const sessionId = `host-hostile-${name}`;
      const error = await refusalOf(sessionId, metadata);

      expect(error.name).toBe('ScribeException');
      expect(error.code).toBe(ScribeErrorCode.BadUserInput);
      expect(error.field).toBe(field);
      expect(error.message.startsWith(`${field}: `)).toBe(true);
      expect(await stored(sessionId)).toBeNull();
    },
  );

  it('refuses a boxed String as a client id: two of them would be taken for one message', async () => {
    const boxed = (id: string) => [{ role: 'USER', content: id, clientMessageId: new String(id) }];
    for (const id of ['id-A', 'id-B']) {
      await expect(transcripts.append('boxed', boxed(id) as never[])).rejects.toMatchObject({
        code: ScribeErrorCode.BadUserInput,
        field: 'input.messages.0.clientMessageId',
      });
    }
    expect(await stored('boxed')).toBeNull();
  });

  it('refuses metadata nested too deep with the code and words GraphQL answers', async () => {
    let deep: unknown = 1;
    for (let level = 0; level < 25; level++) deep = { a: deep };
    const error = await refusalOf('host-deep', deep);
    const overGraphql = await sut.gql(APPEND, {
      input: {
        sessionId: 'gql-deep',
        messages: [
          { role: 'USER', content: 'fine' },
          { role: 'USER', content: 'x', metadata: deep },
        ],
      },
    });

    expect(overGraphql.errors?.[0].message).toBe(error.message);
    expect(overGraphql.errors?.[0].extensions?.code).toBe(error.code);
    expect(overGraphql.errors?.[0].extensions?.field).toBe(error.field);
    expect(await stored('host-deep')).toBeNull();
    expect(await stored('gql-deep')).toBeNull();
  });

  it('stores a lone surrogate and NUL in metadata keys and values alike on both paths', async () => {
    const metadata = { '\ud800': 'a\u0000', 'b\u0000': '\udfff' };
    await transcripts.append('host-text', [{ role: 'USER', content: 'x', metadata }] as never[]);
    const overGraphql = await sut.gql(APPEND, {
      input: { sessionId: 'gql-text', messages: [{ role: 'USER', content: 'x', metadata }] },
    });
    expect(overGraphql.errors).toBeUndefined();

    for (const sessionId of ['host-text', 'gql-text']) {
      const answer = await sut.gql(READ, { id: sessionId });
      expect(answer.data.session.messages.edges[0].node.metadata).toEqual(metadata);
    }
  });
});
