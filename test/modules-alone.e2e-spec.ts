import { type DynamicModule, type Type } from '@nestjs/common';
import { EventEmitterModule } from '@nestjs/event-emitter';
import { Test, type TestingModule, type TestingModuleBuilder } from '@nestjs/testing';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deferred } from '../src/common/testing/deferred.js';
import { ScribeConfigModule } from '../src/config/scribe-config.module.js';
import { DatabaseHealth } from '../src/database/database-health.js';
import { DatabaseModule } from '../src/database/database.module.js';
import { DatabaseReadiness } from '../src/database/database-readiness.js';
import {
  MessageStore,
  type SessionWrite,
  type WrittenSession,
} from '../src/database/message-store.js';
import { MetricsModule } from '../src/metrics/metrics.module.js';
import { SessionModule } from '../src/session/session.module.js';
import { SessionResolveGate } from '../src/session/session-resolve-gate.js';
import { SpoolModule } from '../src/spool/spool.module.js';
import { SpoolService } from '../src/spool/spool.service.js';
import { SpoolDatabaseModule } from '../src/spool-database.module.js';
import { TranscriptModule } from '../src/transcript/transcript.module.js';
import { TranscriptService } from '../src/transcript/transcript.service.js';

// Issue 20: each feature module imports alone, beside the configuration, metrics, events and
// the database module, and its collaborators can be overridden as in any Nest test.
describe('a feature module imported alone', () => {
  let dataDir: string;
  let moduleRef: TestingModule | undefined;

  beforeEach(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'scribe-alone-'));
  });

  afterEach(async () => {
    await moduleRef?.close();
    moduleRef = undefined;
    await rm(dataDir, { recursive: true, force: true });
  });

  async function alone(
    feature: Type | DynamicModule,
    override: (builder: TestingModuleBuilder) => TestingModuleBuilder = (builder) => builder,
  ): Promise<TestingModule> {
    const builder = Test.createTestingModule({
      imports: [
        ScribeConfigModule.forRoot({ dataDir, database: { retryIntervalMs: 100 } }),
        MetricsModule,
        EventEmitterModule.forRoot(),
        DatabaseModule,
        // The journal's binding to database/'s identity, from the composition root (the
        // journal does not know the database layer): what "the database module" means here.
        SpoolDatabaseModule,
        feature,
      ],
    });
    moduleRef = await override(builder).compile();
    await moduleRef.init();
    // The database connects in the background: a test ends once it is up, not while it opens.
    await moduleRef.get(DatabaseReadiness).ready;
    // No wait for the store's writer thread to open its connection: a close while it opens
    // must wait for it (SqliteWriter.close), or the driver aborts the process.
    return moduleRef;
  }

  it('SpoolModule: the journal answers its status', async () => {
    const spool = (await alone(SpoolModule)).get(SpoolService);
    const status = await spool.status();
    expect(status).toMatchObject({
      messages: 0,
      writable: true,
      path: join(dataDir, 'pending_messages'),
    });
  });

  it('TranscriptModule: appends through an overridden MessageStore', async () => {
    const writes: SessionWrite[][] = [];
    // A store that is down: the append is journaled (QUEUED), and the store saw it.
    class DownStore extends MessageStore {
      write(batch: SessionWrite[]): Promise<never> {
        writes.push(batch);
        return Promise.reject(new Error('the overridden store is down'));
      }
      heartbeat(): Promise<void> {
        return Promise.resolve();
      }
    }
    const ref = await alone(TranscriptModule, (builder) =>
      builder.overrideProvider(MessageStore).useValue(new DownStore()),
    );
    const answer = await ref
      .get(TranscriptService)
      .append('alone-1', [{ role: 'USER', content: 'hello' } as never]);
    expect(answer.status).toBe('QUEUED');
    expect(writes.length).toBeGreaterThan(0);
    expect(writes[0][0]).toMatchObject({ sessionId: 'alone-1' });
  });

  it("TranscriptModule: /health's heartbeat (DatabaseHealth.check) queues behind the writes", async () => {
    const release = deferred();
    const calls: string[] = [];
    // A store whose first write waits for the test: the heartbeat must not pass it.
    class HeldStore extends MessageStore {
      async write(batch: SessionWrite[]): Promise<WrittenSession[]> {
        calls.push('write');
        await release.promise;
        return batch.map((write) => ({ inserted: write.records, skipped: [], revision: 1 }));
      }
      heartbeat(): Promise<void> {
        calls.push('heartbeat');
        return Promise.resolve();
      }
    }
    const ref = await alone(TranscriptModule, (builder) =>
      builder.overrideProvider(MessageStore).useValue(new HeldStore()),
    );
    const appended = ref
      .get(TranscriptService)
      .append('alone-3', [{ role: 'USER', content: 'first' } as never]);
    while (!calls.includes('write')) await new Promise((resolve) => setImmediate(resolve));

    const checked = ref.get(DatabaseHealth).check();
    await new Promise((resolve) => setTimeout(resolve, 50));
    const whileHeld = [...calls];
    release.resolve();

    expect(whileHeld).toEqual(['write']);
    await expect(checked).resolves.toBeUndefined();
    expect((await appended).status).toBe('PERSISTED');
    expect(calls).toEqual(['write', 'heartbeat']);
  });

  it("SessionModule: without the write path, /health's heartbeat is the store's own", async () => {
    let heartbeats = 0;
    class CountingStore extends MessageStore {
      write(): Promise<never> {
        return Promise.reject(new Error('no write here'));
      }
      heartbeat(): Promise<void> {
        heartbeats += 1;
        return Promise.resolve();
      }
    }
    const ref = await alone(SessionModule, (builder) =>
      builder.overrideProvider(MessageStore).useValue(new CountingStore()),
    );
    await expect(ref.get(DatabaseHealth).check()).resolves.toBeUndefined();
    expect(heartbeats).toBe(1);
  });

  it('SessionModule: the gate resolves a session (none yet: null)', async () => {
    const gate = (await alone(SessionModule)).get(SessionResolveGate);
    await expect(gate.resolveFull('alone-2')).resolves.toBeNull();
  });
});
