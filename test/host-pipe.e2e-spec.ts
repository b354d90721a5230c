import { Module, ValidationPipe, type ValidationPipeOptions } from '@nestjs/common';
import { APP_PIPE } from '@nestjs/core';
import { createScribeTestingModule, type ScribeTesting } from '../src/kit/index.js';
import { hostGraphQLModule } from './support/host-graphql.js';

// A host's global ValidationPipe, the most common Nest setting, runs before Scribe's own pipe
// on every Scribe argument: it must neither strip, refuse nor transform Scribe's inputs.
const hostPipes: [string, ValidationPipeOptions][] = [
  [
    'whitelist, forbidNonWhitelisted, forbidUnknownValues',
    {
      whitelist: true,
      forbidNonWhitelisted: true,
      forbidUnknownValues: true,
    },
  ],
  ['transform, whitelist', { transform: true, whitelist: true }],
];

const hostGraphQL = hostGraphQLModule();

const APPEND = `mutation($i: AppendMessageInput!) {
  appendMessage(input: $i) { status message { content metadata } }
}`;
const APPEND_MANY = `mutation($i: AppendMessagesInput!) {
  appendMessages(input: $i) { status messages { content toolCalls } }
}`;
const UPDATE = `mutation($i: UpdateSessionInput!) { updateSession(input: $i) { title revision } }`;
const READ = `query($id: ID!) {
  session(id: $id) { id messages(last: 5) { edges { node { content } } } }
  sessions(first: 5, filter: { titleContains: "pipe" }) { totalCount }
}`;

describe.each(['own', 'host'] as const)("a host's global ValidationPipe, '%s' mode", (mode) => {
  describe.each(hostPipes)('ValidationPipe({ %s })', (name, pipeOptions) => {
    let sut: ScribeTesting;
    const sessionId = `pipe-${mode}-${name.length}`;

    beforeAll(async () => {
      @Module({ providers: [{ provide: APP_PIPE, useValue: new ValidationPipe(pipeOptions) }] })
      class HostModule {}
      sut = await createScribeTestingModule({
        imports: mode === 'host' ? [HostModule, hostGraphQL] : [HostModule],
        graphql: { mode },
      });
    });

    afterAll(() => sut?.close());

    it("leaves Scribe's inputs whole: appends, an update and the reads", async () => {
      const one = await sut.gql(APPEND, {
        i: { sessionId, role: 'USER', content: 'first', metadata: { a: [1] } },
      });
      expect(one.errors).toBeUndefined();
      expect(one.data.appendMessage).toEqual({
        status: 'PERSISTED',
        message: { content: 'first', metadata: { a: [1] } },
      });
      const many = await sut.gql(APPEND_MANY, {
        i: {
          sessionId,
          messages: [{ role: 'ASSISTANT', content: 'second', toolCalls: [{ id: 't' }] }],
        },
      });
      expect(many.errors).toBeUndefined();
      expect(many.data.appendMessages.messages).toEqual([
        { content: 'second', toolCalls: [{ id: 't' }] },
      ]);
      const update = await sut.gql(UPDATE, {
        i: { id: sessionId, expectedRevision: null, title: 'pipe test' },
      });
      expect(update.errors).toBeUndefined();
      expect(update.data.updateSession.title).toBe('pipe test');
      const read = await sut.gql(READ, { id: sessionId });
      expect(read.errors).toBeUndefined();
      expect(read.data.session.messages.edges.map((edge: any) => edge.node.content)).toEqual([
        'first',
        'second',
      ]);
      expect(read.data.sessions.totalCount).toBe(1);
    });

    it("still refuses what Scribe refuses, with Scribe's answer", async () => {
      const answer = await sut.gql(APPEND, { i: { sessionId: 'a b', role: 'USER', content: 'x' } });
      expect(answer.errors?.[0].extensions?.code).toBe('BAD_USER_INPUT');
      expect(answer.errors?.[0].message).toMatch(/^input\.sessionId: /);
    });
  });
});
