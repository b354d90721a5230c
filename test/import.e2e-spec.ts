import { JwtService } from '@nestjs/jwt';
import { type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { v4 as uuidV4, v5 as uuidV5 } from 'uuid';
import { databaseKinds } from './support/databases.js';
import { RawGet } from './support/raw-export.js';
import { createTestApp, type TestApp } from './support/test-app.js';

// POST /sessions/{id}/import: an export (format=jsonl) streamed back in through the write path,
// keeping ids and times; idempotent; a bad line refused by its number with nothing after it
// stored; behind the same credentials, scopes and session prefixes as the export.
const SECRET = 'import-suite-secret-of-32-bytes!';
const jwt = new JwtService();
const bearer = (claims: Record<string, unknown>) =>
  `Bearer ${jwt.sign(claims, { secret: SECRET, expiresIn: 300 })}`;
const VARIABLES = {
  API_TOKENS: 'ro=read,ap=append,ops=admin',
  JWT_SECRET: SECRET,
  // Short, so that a body that stalls is cut within the test.
  BODY_TIMEOUT_MS: '1500',
};
const ADMIN = { authorization: 'Bearer ops' };
const NDJSON = 'application/x-ndjson';
const APPEND_MANY = `mutation($input: AppendMessagesInput!) { appendMessages(input: $input) { status messages { id } } }`;
const EDIT = `mutation($input: EditMessageInput!) { editMessage(input: $input) { revision } }`;
const REDACT = `mutation($input: RedactMessageInput!) { redactMessage(input: $input) { revision } }`;
const UPDATE = `mutation($input: UpdateSessionInput!) { updateSession(input: $input) { id } }`;
const COUNT = `query($id: ID!) { session(id: $id) { messageCount revision title } }`;

const TEXTS = [
  'plain ASCII',
  'astral 😀 🧑‍🚀 𝔘𝔫𝔦𝔠𝔬𝔡𝔢',
  'combining e\u0301 n\u0303, precomposed é',
  'breaks\nand\r\nlines\tand tabs \u2028 \u2029',
  'quotes " \\ ` ``` {"message":1}\n{"session":2}',
  'zero width \u200B\u200D\uFEFF',
];
const ROLES = ['USER', 'ASSISTANT', 'TOOL', 'SYSTEM'];
const message = (index: number) => ({
  role: ROLES[index % ROLES.length],
  content: `${index}: ${TEXTS[index % TEXTS.length]}`,
  ...(index % 3 === 0 ? { clientMessageId: `client-${index}` } : {}),
  ...(index % 4 === 2 ? { toolName: 'search', toolCallId: `call-${index}` } : {}),
  ...(index % 7 === 0 ? { toolCalls: [{ name: 'search', arguments: { q: `😀 ${index}` } }] } : {}),
  ...(index % 5 === 0 ? { metadata: { index, tags: ['a', 'é'], nested: { ok: true } } } : {}),
});
const MESSAGES = 1500;

async function listen(server: Server): Promise<number> {
  if (!server.listening)
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/** An app listening, and its export and import. */
class Instance {
  private constructor(
    readonly sut: TestApp,
    readonly port: number,
  ) {}

  static async start(database: 'sqlite' | 'postgres'): Promise<Instance> {
    const sut = await createTestApp(database, VARIABLES);
    return new Instance(sut, await listen(sut.app.getHttpServer() as Server));
  }

  async exported(id: string): Promise<string> {
    const answer = await new RawGet(this.port, `/sessions/${id}/export`, ADMIN).answer();
    expect(answer.status).toBe(200);
    expect(answer.complete).toBe(true);
    return answer.body.toString('utf8');
  }

  async import(
    id: string,
    body: string | Buffer,
    headers: Record<string, string> = ADMIN,
    type = NDJSON,
  ) {
    const answer = await this.sut
      .http()
      .post(`/sessions/${id}/import`)
      .set({ 'content-type': type, ...headers })
      .send(body);
    return { status: answer.status, body: answer.body as Record<string, any> };
  }

  async count(id: string): Promise<number> {
    const answer = await this.sut.gql(COUNT, { id }, ADMIN);
    return (answer.data?.session?.messageCount as number | undefined) ?? 0;
  }
}

const lines = (text: string) => text.split('\n').slice(0, -1);
const messageLine = (fields: Record<string, unknown>) =>
  JSON.stringify({
    message: {
      id: uuidV4(),
      role: 'USER',
      content: 'hello',
      createdAt: '2024-01-02T03:04:05.678Z',
      ...fields,
    },
  });

describe.each(databaseKinds())('POST /sessions/{id}/import on %s', (database) => {
  let source: Instance;
  let target: Instance;
  let file: string;

  beforeAll(async () => {
    source = await Instance.start(database);
    target = await Instance.start(database);
    const ids: string[] = [];
    for (let from = 0; from < MESSAGES; from += 500) {
      const messages = Array.from({ length: 500 }, (_, i) => message(from + i));
      const answer = await source.sut.gql(
        APPEND_MANY,
        { input: { sessionId: 'trip', messages } },
        ADMIN,
      );
      expect(answer.errors).toBeUndefined();
      ids.push(...answer.data.appendMessages.messages.map((stored: { id: string }) => stored.id));
    }
    // Edited (twice, and metadata alone) and redacted messages round-trip as they read.
    for (const input of [
      { id: ids[3], content: 'edited once 🦊', metadata: { edited: true } },
      { id: ids[3], content: 'edited twice', expectedRevision: 2 },
      { id: ids[700], metadata: null },
    ]) {
      const edited = await source.sut.gql(EDIT, { input: { sessionId: 'trip', ...input } }, ADMIN);
      expect(edited.errors).toBeUndefined();
    }
    const redacted = await source.sut.gql(
      REDACT,
      { input: { sessionId: 'trip', id: ids[1400], reason: 'asked to forget 🗑' } },
      ADMIN,
    );
    expect(redacted.data?.redactMessage).toEqual({ revision: 2 });
    const titled = await source.sut.gql(
      UPDATE,
      { input: { id: 'trip', title: 'Trip 🗺️', metadata: { owner: 'u1', é: [1, 2] } } },
      ADMIN,
    );
    expect(titled.errors).toBeUndefined();
    file = await source.exported('trip');
  });

  afterAll(async () => {
    await source?.sut.close();
    await target?.sut.close();
  });

  it('round-trips an export into an empty instance byte for byte, then imports it again as a no-op', async () => {
    const first = await target.import('trip', file);
    expect(first.status).toBe(200);
    expect(first.body).toEqual({
      sessionId: 'trip',
      messages: MESSAGES,
      accepted: MESSAGES,
      existing: 0,
      statuses: { PERSISTED: MESSAGES, QUEUED: 0, BUFFERED: 0 },
      status: 'PERSISTED',
      sessionRestored: true,
    });
    expect(await target.exported('trip')).toBe(file);
    const again = await target.import('trip', file);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ messages: MESSAGES, accepted: 0, existing: MESSAGES });
    expect(await target.exported('trip')).toBe(file);
  });

  it('keeps times apart from the order: an old createdAt is shown, and the next append sorts after', async () => {
    const id = 'old-times';
    const body = [
      JSON.stringify({
        session: {
          id,
          title: null,
          metadata: null,
          createdAt: '2001-01-01T00:00:00.000Z',
          updatedAt: '2001-01-01T00:00:01.000Z',
          messageCount: 2,
          revision: 2,
        },
      }),
      messageLine({ content: 'second, written later', createdAt: '2001-01-01T00:00:01.000Z' }),
      messageLine({ content: 'first, written earlier', createdAt: '2001-01-01T00:00:00.000Z' }),
    ].join('\n');
    expect((await target.import(id, body)).status).toBe(200);
    await target.sut.gql(
      APPEND_MANY,
      { input: { sessionId: id, messages: [{ role: 'USER', content: 'appended now' }] } },
      ADMIN,
    );
    const exported = lines(await target.exported(id)).map((line) => JSON.parse(line));
    expect(exported.slice(1).map((line) => [line.message.content, line.message.createdAt])).toEqual(
      [
        ['second, written later', '2001-01-01T00:00:01.000Z'],
        ['first, written earlier', '2001-01-01T00:00:00.000Z'],
        ['appended now', expect.stringMatching(/^20[2-9]\d-/)],
      ],
    );
  });

  it('refuses a bad line by its number: the lines before it are stored, none after', async () => {
    const head = lines(file)[0].replace('"id":"trip"', '"id":"partial"');
    const good = lines(file)
      .slice(1, 5)
      .map((line) => {
        const parsed = JSON.parse(line);
        delete parsed.message.sessionId;
        if (parsed.message.clientMessageId !== null) parsed.message.clientMessageId = null;
        parsed.message.id = uuidV4();
        return JSON.stringify(parsed);
      });
    const body = [head, ...good, messageLine({ role: 'ROBOT' }), messageLine({})].join('\n');
    const answer = await target.import('partial', body);
    expect(answer.status).toBe(400);
    expect(answer.body.errors[0].extensions).toEqual({ code: 'BAD_USER_INPUT', line: 6 });
    expect(answer.body.errors[0].message).toBe(
      'line 6.message.role: must be one of USER, ASSISTANT, SYSTEM, TOOL',
    );
    expect(answer.body.imported).toMatchObject({ messages: 4, accepted: 4 });
    expect(await target.count('partial')).toBe(4);
  });

  const HEAD = (id: string) =>
    JSON.stringify({
      session: {
        id,
        title: null,
        metadata: null,
        createdAt: '2024-01-01T00:00:00.000Z',
        updatedAt: '2024-01-01T00:00:00.000Z',
        messageCount: 1,
        revision: 1,
      },
    });
  const deep = (depth: number): unknown => (depth === 0 ? 1 : [deep(depth - 1)]);
  const derived = uuidV5(
    JSON.stringify(['hostile', 'c-1']),
    '6f0f3c52-4a7d-4c38-9a8e-3c1d2b7e5a90',
  );
  it.each<[string, string, string | RegExp]>([
    ['not JSON', '{"message":', 'line 2: is not JSON'],
    ['an array', '[1]', 'line 2: must be a JSON object'],
    ['a second session line', HEAD('hostile'), /^line 2: must be \{"message"/],
    [
      'a stray key',
      messageLine({ clientMesageId: 'x' }),
      'line 2.message.clientMesageId: property clientMesageId should not exist',
    ],
    [
      'no createdAt',
      messageLine({ createdAt: undefined }),
      'line 2.message.createdAt: is required',
    ],
    [
      'a date that is no time',
      messageLine({ createdAt: '2024-02-30' }),
      /^line 2\.message\.createdAt: must be a date/,
    ],
    [
      'a time before 1970',
      messageLine({ createdAt: '1969-12-31T23:59:59.999Z' }),
      /^line 2\.message\.createdAt/,
    ],
    ['a NUL in the content', messageLine({ content: 'a\u0000b' }), /^line 2\.message\.content: /],
    ['a lone surrogate', messageLine({ content: 'a\ud800b' }), /^line 2\.message\.content: /],
    [
      'a lone surrogate in a client id',
      messageLine({ clientMessageId: '\udc00' }),
      /^line 2\.message\.clientMessageId: /,
    ],
    ['JSON nested past the bound', messageLine({ metadata: deep(40) }), /^line 2: /],
    [
      'a number JSON cannot hold',
      messageLine({ metadata: { a: 1 } }).replace('"a":1', '"a":1e400'),
      'line 2.message.metadata: holds a number too large for JSON (as 1e400), which would be stored as null',
    ],
    [
      'a redacted message that kept its content',
      messageLine({
        content: 'still here',
        revision: 2,
        redacted: true,
        redactedAt: '2026-01-01T00:00:00.000Z',
        redactionReason: 'r',
      }),
      /^line 2\.message\.content: must be empty on a redacted message/,
    ],
    [
      'a reason with no redaction',
      messageLine({ redactionReason: 'why' }),
      /^line 2\.message\.redactionReason: must be given exactly when/,
    ],
    [
      'redacted said without its time',
      messageLine({ content: '', redacted: true }),
      /^line 2\.message\.redacted: must be true exactly when redactedAt is set/,
    ],
    [
      'an edit with no revision past 1',
      messageLine({ editedAt: '2026-01-01T00:00:00.000Z' }),
      /^line 2\.message\.revision: must be more than 1/,
    ],
    [
      'a revision past 1 with no change',
      messageLine({ revision: 5 }),
      /^line 2\.message\.revision: must be 1 on a message neither edited nor redacted/,
    ],
    [
      'an edit dated before the message',
      messageLine({ revision: 2, editedAt: '1999-01-01T00:00:00.000Z' }),
      /^line 2\.message\.editedAt: is before createdAt/,
    ],
    [
      'an edit dated in the future',
      messageLine({ revision: 2, editedAt: '2999-01-01T00:00:00.000Z' }),
      /^line 2\.message\.editedAt: is in the future/,
    ],
    ['a revision of 0', messageLine({ revision: 0 }), /^line 2\.message\.revision: must be 1 to/],
    [
      'an id that is no UUID',
      messageLine({ id: 'not-a-uuid' }),
      'line 2.message.id: must be a UUID in lower case',
    ],
    [
      'a derived (v5) id without a client id',
      messageLine({ id: derived }),
      /^line 2\.message\.id: is a name-based UUID/,
    ],
    [
      'a client id with an id not derived from it',
      messageLine({ clientMessageId: 'c-2', id: derived }),
      /^line 2\.message\.id: is not the id this session gives/,
    ],
    [
      'a message of another session',
      messageLine({ sessionId: 'other' }),
      /^line 2\.message\.sessionId: must be the session imported into/,
    ],
    ['a status that is none', messageLine({ status: 'DONE' }), /^line 2\.message\.status: /],
  ])(
    'refuses %s with BAD_USER_INPUT naming the line, storing nothing',
    async (_case, line, said) => {
      const answer = await target.import(
        'hostile',
        `${HEAD('hostile')}\n${line}\n${messageLine({})}\n`,
      );
      expect(answer.status).toBe(400);
      expect(answer.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
      if (typeof said === 'string') expect(answer.body.errors[0].message).toBe(said);
      else expect(answer.body.errors[0].message).toMatch(said);
      expect(answer.body.imported.messages).toBe(0);
      expect(await target.count('hostile')).toBe(0);
    },
  );

  it('refuses such a number in an append too, which a retry would otherwise find changed', async () => {
    const answer = await target.sut
      .http()
      .post('/graphql')
      .set({ 'content-type': 'application/json', ...ADMIN })
      .send(
        `{"query":${JSON.stringify(APPEND_MANY)},"variables":{"input":{"sessionId":"huge","messages":[{"role":"USER","content":"x","clientMessageId":"h-1","metadata":{"a":1e400}}]}}}`,
      );
    expect(answer.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
    expect(answer.body.errors[0].message).toMatch(/too large for JSON/);
    expect(await target.count('huge')).toBe(0);
  });

  it.each<[string, string | Buffer, RegExp]>([
    ['an empty body', '', /^line 1: the body is empty/],
    ['a first line that is a message', messageLine({}), /^line 1: must be \{"session"/],
    [
      'a first line of another session',
      HEAD('someone-else'),
      /^line 1\.session\.id: must be the session imported into/,
    ],
    [
      'bytes that are not UTF-8',
      Buffer.concat([Buffer.from(`${HEAD('hostile')}\n`), Buffer.from([0xc3, 0x28, 0x0a])]),
      /^line 2: is not UTF-8$/,
    ],
    [
      'a line longer than any message',
      `${HEAD('hostile')}\n${'x'.repeat(7 * 1024 * 1024)}\n`,
      /^line 2: is longer than/,
    ],
  ])('refuses %s', async (_case, body, said) => {
    const answer = await target.import('hostile', body);
    expect(answer.status).toBe(400);
    expect(answer.body.errors[0].message).toMatch(said);
    expect(await target.count('hostile')).toBe(0);
  });

  it('refuses an id stored with other content, or stored in another session (409), storing none of its batch', async () => {
    const [head, ...rest] = lines(file);
    const changed = JSON.parse(rest[10]);
    changed.message.content = 'rewritten';
    const conflicting = await target.import(
      'trip',
      [head, rest[9], JSON.stringify(changed)].join('\n'),
    );
    expect(conflicting.status).toBe(409);
    expect(conflicting.body.errors[0].extensions).toEqual({
      code: 'IDEMPOTENCY_CONFLICT',
      line: 3,
    });
    // The line before it in the same batch is stored (it was, already).
    expect(conflicting.body.imported).toMatchObject({ messages: 1, existing: 1 });
    const elsewhere = JSON.parse(
      rest.find((line) => JSON.parse(line).message.clientMessageId === null)!,
    );
    delete elsewhere.message.sessionId;
    const squatting = await target.import(
      'squat',
      [HEAD('squat'), messageLine({}), JSON.stringify(elsewhere)].join('\n'),
    );
    expect(squatting.status).toBe(409);
    expect(squatting.body.errors[0].message).toMatch(/another session's message/);
    expect(await target.count('squat')).toBe(1);
  });

  // Each import's transaction holds the ids it inserted until it commits: the same ids in two
  // orders, into two sessions at once, can deadlock two write transactions (PostgreSQL's two
  // write connections). The victim must wait and find them stored, not be journaled as an
  // outage (QUEUED) whose replay would then drop them as stored.
  it('imports the same messages into two sessions at once: each stored once, none QUEUED', async () => {
    for (let round = 0; round < 3; round++) {
      const ids = Array.from({ length: 990 }, () => uuidV4());
      // And ten of each session's own, after the shared ones in the same batch: stored even
      // when a shared one is refused, and then counted in the refusal's `imported`.
      const own = () => Array.from({ length: 10 }, () => uuidV4());
      const file = (session: string, order: string[]) =>
        [HEAD(session), ...order.map((id) => messageLine({ id, content: `m ${id}` }))].join('\n');
      const sessions = [`race-x${round}`, `race-y${round}`];
      const answers = await Promise.all([
        target.import(sessions[0], file(sessions[0], [...ids, ...own()])),
        target.import(sessions[1], file(sessions[1], [...[...ids].reverse(), ...own()])),
      ]);

      const counts = await Promise.all(sessions.map((session) => target.count(session)));
      answers.forEach((answer, index) => {
        if (answer.status === 409) {
          expect(answer.body.errors[0].message).toMatch(/another session's message/);
        } else {
          expect(answer.status).toBe(200);
          expect(answer.body.status).toBe('PERSISTED');
        }
        // A 200's counts are its body; a refusal's, its `imported`.
        expect((answer.body.imported ?? answer.body).accepted).toBe(counts[index]);
      });
      expect(counts[0] + counts[1]).toBeGreaterThanOrEqual(ids.length + 10);
      expect(counts[0] + counts[1]).toBeLessThanOrEqual(ids.length + 20);
    }
    const after = await target.sut.gql(
      APPEND_MANY,
      { input: { sessionId: 'race-after', messages: [message(1)] } },
      ADMIN,
    );
    expect(after.data?.appendMessages.status).toBe('PERSISTED');
  });

  it('refuses a line that says more happened to a stored message than the store knows (409)', async () => {
    const [head, ...rest] = lines(file);
    const later = JSON.parse(rest[20]);
    Object.assign(later.message, {
      content: '',
      metadata: null,
      toolCalls: null,
      revision: 2,
      redacted: true,
      redactedAt: later.message.createdAt,
      redactionReason: 'redacted after the store took it',
    });

    const answer = await target.import('trip', [head, JSON.stringify(later)].join('\n'));

    expect(answer.status).toBe(409);
    expect(answer.body.errors[0]).toMatchObject({
      message: expect.stringMatching(/^line 2\.message: .*another revision/),
      extensions: { code: 'IDEMPOTENCY_CONFLICT', line: 2 },
    });
    const read = await target.sut.gql(
      `query($id: ID!) { session(id: $id) { messages(first: 30) { edges { node { id redacted } } } } }`,
      { id: 'trip' },
      ADMIN,
    );
    const node = read.data.session.messages.edges
      .map((edge: { node: { id: string; redacted: boolean } }) => edge.node)
      .find((each: { id: string }) => each.id === later.message.id);
    expect(node).toEqual({ id: later.message.id, redacted: false });
  });

  it("restores no session's own fields from a file with an id twice, whatever it counts", async () => {
    const appended = await target.sut.gql(
      APPEND_MANY,
      { input: { sessionId: 'victim', messages: [{ role: 'USER', content: 'mine' }] } },
      ADMIN,
    );
    expect(appended.errors).toBeUndefined();
    const head = JSON.stringify({
      session: {
        id: 'victim',
        title: 'HIJACKED',
        metadata: null,
        createdAt: '1999-01-01T00:00:00.000Z',
        updatedAt: '1999-01-01T00:00:00.000Z',
        messageCount: 1001,
        revision: 1001,
      },
    });
    const fresh = Array.from({ length: 1000 }, () => messageLine({}));
    const answer = await target.import('victim', [head, ...fresh, fresh[0]].join('\n'));
    expect(answer.body).toMatchObject({ messages: 1001, existing: 1, sessionRestored: false });
    const read = await target.sut.gql(COUNT, { id: 'victim' }, ADMIN);
    expect(read.data.session).toMatchObject({ messageCount: 1001, title: null });
  });

  it('stores the whole lines that came before a body cut by its deadline (408)', async () => {
    const sent = `${HEAD('stalled')}\n${messageLine({})}\n`;
    // A client that keeps its side open after the answer and trickles on, as a slow one does.
    const socket = connect({ port: target.port, host: '127.0.0.1', allowHalfOpen: true });
    let answered = '';
    socket.on('data', (chunk) => (answered += chunk.toString('utf8')));
    socket.on('error', () => undefined);
    socket.write(
      'POST /sessions/stalled/import HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ops\r\n' +
        `Content-Type: ${NDJSON}\r\nContent-Length: 100000\r\n\r\n${sent}`,
    );
    const trickle = setInterval(() => socket.writable && socket.write(' '), 300);
    try {
      const deadline = Date.now() + 8000;
      while ((await target.count('stalled')) !== 1 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(answered).toMatch(/^HTTP\/1\.1 408 /);
      expect(await target.count('stalled')).toBe(1);
    } finally {
      clearInterval(trickle);
      socket.destroy();
    }
  });

  const U = 'UNAUTHENTICATED';
  const F = 'FORBIDDEN';
  it.each<[string, string, number | string, Record<string, string>]>([
    ['no token', 'u1-new', U, {}],
    ['a wrong token', 'u1-new', U, { authorization: 'Bearer nope' }],
    ['a read token', 'u1-new', F, { authorization: 'Bearer ro' }],
    ['an append token', 'u1-ap', 200, { authorization: 'Bearer ap' }],
    [
      'an append JWT limited to u1-',
      'u1-own',
      200,
      { authorization: bearer({ sub: 'u1', scope: 'append', session_prefix: 'u1-' }) },
    ],
    [
      'an append JWT limited to u1-',
      'u2-theirs',
      F,
      { authorization: bearer({ sub: 'u1', scope: 'append', session_prefix: 'u1-' }) },
    ],
  ])('with %s into %s: %s', async (_case, id, expected, headers) => {
    const answer = await target.import(id, `${HEAD(id)}\n${messageLine({})}\n`, headers);
    if (typeof expected === 'number') {
      expect(answer.status).toBe(expected);
      expect(await target.count(id)).toBe(1);
    } else {
      expect(answer.body.errors[0].extensions.code).toBe(expected);
      expect(answer.status).toBe(expected === U ? 401 : 403);
      expect(await target.count(id)).toBe(0);
    }
  });

  it.each(['application/json', 'text/plain', 'application/x-www-form-urlencoded'])(
    'refuses a body of type %s unread (415)',
    async (type) => {
      const answer = await target.import(
        'typed',
        `${HEAD('typed')}\n${messageLine({})}\n`,
        ADMIN,
        type,
      );
      expect(answer.status).toBe(415);
      expect(answer.body.errors[0].extensions.code).toBe('UNSUPPORTED_MEDIA_TYPE');
      expect(await target.count('typed')).toBe(0);
    },
  );
});
