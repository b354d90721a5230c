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

interface Answer {
  status: number;
  body: { data?: Record<string, unknown> | null; errors?: { extensions?: { code?: string } }[] };
}

/** One GraphQL POST to `path` of the running test app. */
async function post(
  testing: ScribeTesting,
  path: string,
  query: string,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const base = (await testing.app.getUrl()).replace('[::1]', '127.0.0.1');
  const response = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ query }),
  });
  return { status: response.status, body: (await response.json()) as Answer['body'] };
}

/**
 * The host app's e2e cases, for one serving mode: the host's fields answer with no token,
 * Scribe's need Scribe's, and the host's service appends through TranscriptService, PERSISTED
 * while the database is up and QUEUED while the kit holds it down.
 */
export function hostAppCases(mode: 'own' | 'host'): void {
  // 'own': Scribe on its /graphql, the host on its own path; 'host': one shared /graphql.
  const hostPath = mode === 'own' ? HOST_GRAPHQL_PATH : '/graphql';
  const scribePath = '/graphql';

  describe(`the host app, Scribe in '${mode}' mode`, () => {
    let testing: ScribeTesting;

    before(async () => {
      testing = await createScribeTestingModule({
        imports: [HostModule, hostGraphql(mode)],
        options: { graphql: { mode }, auth: { apiTokens: `${TOKEN}=read+append` } },
      });
    });

    after(async () => {
      await testing?.close();
    });

    it("answers the host's own field with no token", async () => {
      const answer = await post(testing, hostPath, '{ hello }');
      assert.equal(answer.status, 200);
      assert.deepEqual(answer.body, { data: { hello: 'Hello from the host' } });
    });

    it("refuses Scribe's field without Scribe's token and answers it with one", async () => {
      const query = '{ session(id: "host-app-absent") { id } }';
      const refused = await post(testing, scribePath, query);
      assert.equal(refused.status, 401);
      assert.equal(refused.body.errors?.[0]?.extensions?.code, 'UNAUTHENTICATED');
      const answered = await post(testing, scribePath, query, BEARER);
      assert.equal(answered.status, 200);
      assert.deepEqual(answered.body, { data: { session: null } });
    });

    it('appends through the injected TranscriptService: PERSISTED', async () => {
      const notes = testing.app.get(NotesService);
      assert.equal(await notes.note(`persisted-${mode}`, 'first note'), 'PERSISTED');
    });

    it('answers QUEUED while the database is down, and the host mutation says so', async () => {
      const notes = testing.app.get(NotesService);
      await testing.faults.databaseDown();
      try {
        assert.equal(await notes.note(`queued-${mode}`, 'kept in the journal'), 'QUEUED');
        const mutation = `mutation { note(sessionId: "queued-${mode}", text: "again") }`;
        const answer = await post(testing, hostPath, mutation);
        assert.deepEqual(answer.body, { data: { note: 'QUEUED' } });
      } finally {
        await testing.faults.databaseUp();
      }
    });
  });
}
