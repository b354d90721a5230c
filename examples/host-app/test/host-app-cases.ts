import 'reflect-metadata';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createScribeTestingModule, type ScribeTesting } from '@scribe/server/testing';
import { HOST_GRAPHQL_PATH, hostGraphql } from '../src/host-graphql.js';
import { HostModule } from '../src/host.module.js';
import { NotesService } from '../src/notes.service.js';

// A static token of Scribe's own auth: Scribe's fields need it, the host's do not.
const TOKEN = 'host-app-test';
const BEARER = { authorization: `Bearer ${TOKEN}` };

const TRANSCRIPT = `query Transcript($id: ID!) {
  session(id: $id) { messageCount messages { edges { node { role content status } } } }
}`;

interface Transcript {
  session: {
    messageCount: number;
    messages: { edges: { node: { role: string; content: string; status: string } }[] };
  } | null;
}

/**
 * The host app's e2e cases, for one serving mode: the host's fields answer with no token while
 * Scribe's tokens are configured, Scribe's fields need Scribe's token, and the host's service
 * appends through the injected TranscriptService: PERSISTED while the database is up, QUEUED
 * while the kit holds it down, and stored (readable over GraphQL) once it is back.
 */
export function hostAppCases(mode: 'own' | 'host'): void {
  // 'own': Scribe on its /graphql, the host on its own path; 'host': one shared /graphql.
  const hostPath = mode === 'own' ? HOST_GRAPHQL_PATH : '/graphql';

  describe(`the host app, Scribe in '${mode}' mode`, () => {
    let testing: ScribeTesting;

    before(async () => {
      testing = await createScribeTestingModule({
        imports: [HostModule, hostGraphql(mode)],
        graphql: { mode },
        options: { auth: { apiTokens: `${TOKEN}=read+append` } },
      });
    });

    after(async () => {
      await testing?.close();
    });

    it("answers the host's own field with no token", async () => {
      const answer = await testing.gql('{ hello }', undefined, {}, hostPath);
      assert.equal(answer.status, 200);
      assert.deepEqual(answer.body, { data: { hello: 'Hello from the host' } });
    });

    it("refuses Scribe's field without Scribe's token and answers it with one", async () => {
      const query = '{ session(id: "host-app-absent") { id } }';
      const refused = await testing.gql(query);
      assert.equal(refused.status, 401);
      assert.equal(refused.errors?.[0]?.extensions?.code, 'UNAUTHENTICATED');
      assert.equal(refused.data?.session, undefined);
      const answered = await testing.gql(query, undefined, BEARER);
      assert.equal(answered.status, 200);
      assert.deepEqual(answered.body, { data: { session: null } });
    });

    it('appends through the injected TranscriptService: PERSISTED', async () => {
      const notes = testing.app.get(NotesService);
      assert.equal(await notes.note(`persisted-${mode}`, 'first note'), 'PERSISTED');
    });

    it('answers QUEUED while the database is down, and stores it once it is back', async () => {
      const notes = testing.app.get(NotesService);
      const sessionId = `queued-${mode}`;
      await testing.faults.databaseDown();
      try {
        assert.equal(await notes.note(sessionId, 'kept in the journal'), 'QUEUED');
        // The host's mutation, with no token: the host's own field, the same service.
        const mutation = `mutation { note(sessionId: "${sessionId}", text: "again") }`;
        const answer = await testing.gql(mutation, undefined, {}, hostPath);
        assert.deepEqual(answer.body, { data: { note: 'QUEUED' } });
      } finally {
        await testing.faults.databaseUp();
      }
      await testing.settled();
      const read = await testing.gql<Transcript>(TRANSCRIPT, { id: sessionId }, BEARER);
      assert.equal(read.status, 200);
      assert.deepEqual(read.data?.session?.messages.edges, [
        { node: { role: 'USER', content: 'kept in the journal', status: 'PERSISTED' } },
        { node: { role: 'USER', content: 'again', status: 'PERSISTED' } },
      ]);
      assert.equal(read.data?.session?.messageCount, 2);
    });
  });
}
