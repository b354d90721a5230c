import { createTestApp, type TestApp } from './support/test-app.js';

const ADMIN_QUERY = `{
  pendingStatus { databaseWritable totalPending sessions { sessionId pending } }
  spoolStatus { path writable error messages bytes oldestAgeMs sessions { sessionId messages } setAside { source reason } setAsideCount }
  gateStatus { activeLoads waitingLoads inFlight cacheSize cacheCapacity concurrency }
}`;

describe('admin queries', () => {
  describe('with ADMIN_TOKEN configured', () => {
    let sut: TestApp;

    beforeAll(async () => {
      sut = await createTestApp('sqlite', {
        ADMIN_TOKEN: 'correct-horse',
        SESSION_RESOLVE_CONCURRENCY: '3',
        SESSION_CACHE_SIZE: '7',
      });
    });

    afterAll(async () => {
      await sut.close();
    });

    it.each([
      ['no Authorization header', {}],
      ['a wrong token', { authorization: 'Bearer wrong-horse' }],
      ['a token of another length', { authorization: 'Bearer x' }],
      ['another scheme', { authorization: 'Basic correct-horse' }],
    ])('answers %s with UNAUTHENTICATED and no data', async (_name, headers) => {
      const response = await sut.gql(ADMIN_QUERY, undefined, headers);
      expect(response.data ?? null).toBeNull();
      expect(response.errors?.map((error) => error.extensions?.code)).toContain('UNAUTHENTICATED');
    });

    it('answers the right bearer token', async () => {
      const response = await sut.gql(ADMIN_QUERY, undefined, {
        authorization: 'Bearer correct-horse',
      });
      expect(response.errors).toBeUndefined();
      expect(response.data.pendingStatus).toEqual({
        databaseWritable: true,
        totalPending: 0,
        sessions: [],
      });
      expect(response.data.spoolStatus).toEqual({
        path: `${sut.dataDir}/pending_messages`,
        writable: true,
        error: null,
        messages: 0,
        bytes: 0,
        oldestAgeMs: null,
        sessions: [],
        setAside: [],
        setAsideCount: 0,
      });
      expect(response.data.gateStatus).toEqual({
        activeLoads: 0,
        waitingLoads: 0,
        inFlight: 0,
        cacheSize: 0,
        cacheCapacity: 7,
        concurrency: 3,
      });
    });
  });

  it('refuses every token when no ADMIN_TOKEN is configured', async () => {
    const sut = await createTestApp('sqlite');
    try {
      const attempts: Record<string, string>[] = [
        {},
        { authorization: 'Bearer ' },
        { authorization: 'Bearer undefined' },
      ];
      for (const headers of attempts) {
        const response = await sut.gql(`{ gateStatus { concurrency } }`, undefined, headers);
        expect(response.data ?? null).toBeNull();
        expect(response.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
      }
    } finally {
      await sut.close();
    }
  });
});
