import { GraphQLSchemaHost } from '@nestjs/graphql';
import { isObjectType } from 'graphql';
import { undeclaredFields } from '../src/common/auth/field-scope.js';
import { databaseKinds } from './support/databases.js';
import { createTestApp, type TestApp } from './support/test-app.js';

// An `append`-only token must read nothing stored, wherever a stored field appears (a
// mutation's answer included), and learn nothing from a refusal that a read would tell it.
const TOKENS = { API_TOKENS: 'ap=append,rw=read+append' };
const APPEND_ONLY = { authorization: 'Bearer ap' };
const READER = { authorization: 'Bearer rw' };
const SECRET = 'secret password is hunter2';

async function seedVictim(sut: TestApp): Promise<void> {
  const appended = await sut.gql(
    `mutation($input: AppendMessageInput!) { appendMessage(input: $input) { status } }`,
    { input: { sessionId: 'victim', role: 'USER', content: SECRET, clientMessageId: 'pin' } },
    READER,
  );
  expect(appended.errors).toBeUndefined();
  const titled = await sut.gql(
    `mutation { updateSession(input: { id: "victim", title: "t-secret", metadata: { m: "m-secret" } }) { revision } }`,
    undefined,
    READER,
  );
  expect(titled.errors).toBeUndefined();
}

const victim = (sut: TestApp) =>
  sut.gql(`{ session(id: "victim") { title metadata revision } }`, undefined, READER);

describe.each(databaseKinds())('scopes below the root field on %s', (database) => {
  let sut: TestApp;

  beforeAll(async () => {
    sut = await createTestApp(database, { ...TOKENS, MAX_REFUSALS_PER_MINUTE: '1000' });
    await seedVictim(sut);
  });

  afterAll(() => sut.close());

  it.each([
    ['messages', 'messages(first: 1000) { edges { node { content } } }'],
    ['title', 'title'],
    ['metadata', 'metadata'],
    ['revision', 'revision'],
    ['messages in a fragment', '...S', 'fragment S on Session { messages { totalCount } }'],
  ])(
    "refuses an append-only updateSession that selects the session's %s, changing nothing",
    async (_name, selection, fragment = '') => {
      const before = await victim(sut);
      const response = await sut.gql(
        `mutation { updateSession(input: { id: "victim", metadata: null }) { id ${selection} } } ${fragment}`,
        undefined,
        APPEND_ONLY,
      );
      expect(response.status).toBe(403);
      expect(response.errors?.map((error) => error.extensions?.code)).toEqual(['FORBIDDEN']);
      expect(response.errors?.[0].message).toMatch(/needs the read scope/);
      expect(JSON.stringify(response.body)).not.toMatch(/hunter2|t-secret|m-secret/);
      expect(response.data ?? null).toBeNull();
      // Refused whole, before it ran: the update was not made.
      expect((await victim(sut)).data).toEqual(before.data);
    },
  );

  it('answers an append-only updateSession that selects only what it sent', async () => {
    const response = await sut.gql(
      `mutation { updateSession(input: { id: "victim", title: "t-secret" }) { id __typename } }`,
      undefined,
      APPEND_ONLY,
    );
    expect(response.errors).toBeUndefined();
    expect(response.data).toEqual({ updateSession: { id: 'victim', __typename: 'Session' } });
  });

  it("refuses an append-only append whose answer selects the message's stored fields", async () => {
    const response = await sut.gql(
      `mutation($input: AppendMessageInput!) { appendMessage(input: $input) { status message { id content createdAt } } }`,
      { input: { sessionId: 'victim', role: 'USER', content: SECRET, clientMessageId: 'pin' } },
      APPEND_ONLY,
    );
    expect(response.errors?.map((error) => error.extensions?.code)).toEqual(['FORBIDDEN']);
    expect(response.data ?? null).toBeNull();
    const own = await sut.gql(
      `mutation($input: AppendMessageInput!) { appendMessage(input: $input) { status message { id sessionId status } } }`,
      { input: { sessionId: 'own', role: 'USER', content: 'mine' } },
      APPEND_ONLY,
    );
    expect(own.errors).toBeUndefined();
    expect(own.data.appendMessage).toMatchObject({
      status: 'PERSISTED',
      message: { sessionId: 'own' },
    });
  });

  it('tells an append-only caller neither whether a session exists nor its revision', async () => {
    const answers = [];
    for (const id of ['victim', 'nobody-here']) {
      const response = await sut.gql(
        `mutation($id: ID!) { updateSession(input: { id: $id, title: "x", expectedRevision: 7 }) { id } }`,
        { id },
        APPEND_ONLY,
      );
      answers.push({
        code: response.errors?.[0].extensions?.code,
        message: response.errors?.[0].message,
        field: response.errors?.[0].extensions?.field,
      });
    }
    expect(answers[0]).toEqual(answers[1]);
    expect(answers[0].code).toBe('REVISION_CONFLICT');
    const { revision } = (await victim(sut)).data.session;
    expect(answers[0].message).not.toContain(String(revision));
    // A reader, who could read the revision anyway, is told it.
    const read = await sut.gql(
      `mutation { updateSession(input: { id: "victim", title: "x", expectedRevision: 7 }) { id } }`,
      undefined,
      READER,
    );
    expect(read.errors?.[0].message).toContain(`revision ${revision}`);
    const missing = await sut.gql(
      `mutation { updateSession(input: { id: "nobody-here", title: "x", expectedRevision: 7 }) { id } }`,
      undefined,
      READER,
    );
    expect(missing.errors?.[0].extensions?.code).toBe('NOT_FOUND');
  });

  it('does not name the field an append-only retry differs in', async () => {
    const answers = [];
    for (const input of [
      { role: 'USER', content: 'my pin is 0000' },
      { role: 'ASSISTANT', content: SECRET },
      { role: 'USER', content: SECRET, metadata: { a: 1 } },
    ]) {
      const response = await sut.gql(
        `mutation($input: AppendMessageInput!) { appendMessage(input: $input) { status } }`,
        { input: { sessionId: 'victim', clientMessageId: 'pin', ...input } },
        APPEND_ONLY,
      );
      expect(response.errors?.[0].extensions?.code).toBe('IDEMPOTENCY_CONFLICT');
      answers.push(response.errors?.[0].message);
    }
    expect(new Set(answers).size).toBe(1);
    expect(answers[0]).not.toMatch(/content|role|metadata/);
    const read = await sut.gql(
      `mutation($input: AppendMessageInput!) { appendMessage(input: $input) { status } }`,
      { input: { sessionId: 'victim', clientMessageId: 'pin', role: 'USER', content: 'x' } },
      READER,
    );
    expect(read.errors?.[0].message).toMatch(/another content/);
  });
});

describe.each(databaseKinds())('refusals that could be an oracle, on %s', (database) => {
  let sut: TestApp;

  beforeEach(async () => {
    sut = await createTestApp(database, { ...TOKENS, MAX_REFUSALS_PER_MINUTE: '3' });
    await seedVictim(sut);
  });

  afterEach(() => sut.close());

  const rateLimitedAfterThree = async (send: () => ReturnType<TestApp['gql']>, code: string) => {
    for (let attempt = 0; attempt < 3; attempt += 1) {
      expect((await send()).errors?.[0].extensions?.code).toBe(code);
    }
    const turnedAway = await send();
    expect(turnedAway.status).toBe(429);
    expect(turnedAway.errors?.[0].extensions?.code).toBe('RATE_LIMITED');
  };

  it('spends the refusal budget on IDEMPOTENCY_CONFLICT: guessing content is bounded', async () => {
    let guess = 0;
    await rateLimitedAfterThree(
      () =>
        sut.gql(
          `mutation($input: AppendMessageInput!) { appendMessage(input: $input) { status } }`,
          {
            input: {
              sessionId: 'victim',
              clientMessageId: 'pin',
              role: 'USER',
              content: `my pin is ${guess++}`,
            },
          },
          APPEND_ONLY,
        ),
      'IDEMPOTENCY_CONFLICT',
    );
  });

  it.each([
    ['REVISION_CONFLICT', 'victim'],
    ['NOT_FOUND', 'nobody-here'],
  ])('spends the refusal budget on %s', async (code, id) => {
    await rateLimitedAfterThree(
      () =>
        sut.gql(
          `mutation($id: ID!, $at: Int) { updateSession(input: { id: $id, title: "x", expectedRevision: $at }) { id } }`,
          { id, at: code === 'NOT_FOUND' ? null : -1 },
          READER,
        ),
      code,
    );
  });
});

describe('the scope walk over the whole schema', () => {
  let sut: TestApp;

  beforeAll(async () => {
    sut = await createTestApp('sqlite', TOKENS);
  });

  afterAll(() => sut.close());

  it('finds every field of every object type declaring who may see it', () => {
    const { schema } = sut.app.get(GraphQLSchemaHost);
    expect(undeclaredFields(schema)).toEqual([]);
    // The walk saw the API's types: the ones whose fields hold what is stored among them.
    const walked = Object.values(schema.getTypeMap()).filter(
      (type) => isObjectType(type) && !type.name.startsWith('__'),
    );
    expect(walked.map((type) => type.name)).toEqual(
      expect.arrayContaining([
        'Session',
        'Message',
        'MessageEdge',
        'SessionConnection',
        'PageInfo',
      ]),
    );
  });
});
