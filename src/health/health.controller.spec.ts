import { type INestApplication, type Provider } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { Test, type TestingModuleBuilder } from '@nestjs/testing';
import request from 'supertest';
import { AppendIntake } from '../common/lifecycle/append-intake.js';
import { AppendIntakeModule } from '../common/lifecycle/append-intake.module.js';
import { ScribeConfig } from '../config/scribe-config.js';
import { DatabaseHealth } from '../database/database-health.js';
import { databaseHealthProvider } from '../database/database-health.provider.js';
import { DatabaseHeartbeat } from '../database/database-heartbeat.js';
import { DB_RETRY_INTERVAL_MS } from '../database/database.tokens.js';
import { DatabaseReadiness } from '../database/database-readiness.js';
import { MessageStore } from '../database/message-store.js';
import { type Unavailable, type Written } from '../message/outcomes.js';
import { BlockedFiles } from '../spool/blocked-files.js';
import { SpoolService } from '../spool/spool.service.js';
import { HealthController } from './health.controller.js';

const COMMITTED: Written = {
  kind: 'written',
  inserted: [],
  skipped: [],
  refused: [],
  revision: null,
};

/** A heartbeat that answers what the test says, counting the calls. */
class ScriptedHeartbeat extends DatabaseHeartbeat {
  beats = 0;
  answer: Written | Unavailable = COMMITTED;

  heartbeat(): Promise<Written | Unavailable> {
    this.beats += 1;
    return Promise.resolve(this.answer);
  }
}

/** The store DatabaseModule builds its own heartbeat on when nothing provides one. */
class CountingStore {
  beats = 0;
  failure: Error | undefined;

  write(): Promise<never> {
    return Promise.reject(new Error('no write in these tests'));
  }

  heartbeat(): Promise<void> {
    this.beats += 1;
    return this.failure ? Promise.reject(this.failure) : Promise.resolve();
  }
}

// HealthController wired as DatabaseModule wires DatabaseHealth (databaseHealthProvider), the
// journal faked as up: /health's database result is whatever DatabaseHealth's heartbeat says.
describe(HealthController.name, () => {
  let app: INestApplication | undefined;
  let store: CountingStore;

  beforeEach(() => {
    store = new CountingStore();
  });

  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  async function serve(
    { heartbeat, development = false }: { heartbeat?: Provider; development?: boolean },
    override: (builder: TestingModuleBuilder) => TestingModuleBuilder = (builder) => builder,
  ): Promise<INestApplication> {
    const builder = Test.createTestingModule({
      imports: [TerminusModule, AppendIntakeModule],
      controllers: [HealthController],
      providers: [
        databaseHealthProvider,
        ...(heartbeat ? [heartbeat] : []),
        { provide: DatabaseReadiness, useValue: { isReady: true } },
        { provide: DB_RETRY_INTERVAL_MS, useValue: 1000 },
        { provide: MessageStore, useValue: store },
        {
          provide: ScribeConfig,
          useValue: ScribeConfig.fromVariables(development ? { NODE_ENV: 'development' } : {}),
        },
        {
          provide: SpoolService,
          useValue: { checkWritable: () => Promise.resolve(), writableAsLastSeen: true },
        },
        { provide: BlockedFiles, useValue: { size: 0 } },
      ],
    });
    const moduleRef = await override(builder).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    return app;
  }

  const health = async (target: INestApplication) => {
    const response = await request(target.getHttpServer()).get('/health');
    return { http: response.status, body: response.body as unknown };
  };

  const spoolUp = { status: 'up', blocked: 0 };
  // A DatabaseHeartbeat provided as TranscriptModule provides one (its writer, there).
  const provided: Provider = { provide: DatabaseHeartbeat, useClass: ScriptedHeartbeat };

  it('answers the database up while the overridden heartbeat commits', async () => {
    const scripted = new ScriptedHeartbeat();
    const target = await serve({ heartbeat: provided }, (b) =>
      b.overrideProvider(DatabaseHeartbeat).useValue(scripted),
    );

    expect(await health(target)).toEqual({
      http: 200,
      body: {
        status: 'ok',
        info: { database: { status: 'up' }, spool: spoolUp },
        error: {},
        details: { database: { status: 'up' }, spool: spoolUp },
      },
    });
    expect(scripted.beats).toBe(1);
    expect(store.beats).toBe(0);
  });

  it('answers the database down, degraded, when the overridden heartbeat finds it unavailable', async () => {
    const scripted = new ScriptedHeartbeat();
    scripted.answer = { kind: 'unavailable', error: new Error('connection refused') };
    const target = await serve({ heartbeat: provided, development: true }, (b) =>
      b.overrideProvider(DatabaseHeartbeat).useValue(scripted),
    );

    expect(await health(target)).toEqual({
      http: 200,
      body: {
        status: 'degraded',
        info: { spool: spoolUp },
        error: { database: { status: 'down', message: 'connection refused' } },
        details: { database: { status: 'down', message: 'connection refused' }, spool: spoolUp },
      },
    });
    expect(scripted.beats).toBe(1);
    // A probe of /health's own: the state the write path keeps is left as it was.
    expect(target.get(DatabaseHealth).status().up).toBe(true);
  });

  it('asks no heartbeat while the database is known to have a full disk', async () => {
    const scripted = new ScriptedHeartbeat();
    const target = await serve({
      heartbeat: { provide: DatabaseHeartbeat, useValue: scripted },
      development: true,
    });
    const full = Object.assign(new Error('SQLITE_FULL: database or disk is full'), {
      code: 'SQLITE_FULL',
    });
    target.get(DatabaseHealth).failed('s1', full, 1);

    const answer = await health(target);

    expect(answer.body).toMatchObject({
      status: 'degraded',
      error: {
        database: {
          status: 'down',
          message: "the database's disk is full: SQLITE_FULL: database or disk is full",
        },
      },
    });
    expect(scripted.beats).toBe(0);
  });

  it("commits the store's own heartbeat when nothing provides one (DatabaseModule alone)", async () => {
    const target = await serve({});

    expect((await health(target)).body).toMatchObject({
      status: 'ok',
      details: { database: { status: 'up' } },
    });
    expect(store.beats).toBe(1);

    store.failure = new Error('database is locked');
    expect((await health(target)).body).toMatchObject({
      status: 'degraded',
      details: { database: { status: 'down' } },
    });
    expect(store.beats).toBe(2);
  });

  it('says shutting_down, on /health and /health/ready, once the append intake closes', async () => {
    const target = await serve({ heartbeat: provided });
    const server = target.getHttpServer();
    expect((await request(server).get('/health/ready')).body).toEqual({
      status: 'ready',
      database: 'up',
      journal: 'up',
    });

    target.get(AppendIntake).close();

    expect(await health(target)).toEqual({
      http: 503,
      body: {
        status: 'shutting_down',
        info: { database: { status: 'up' }, spool: spoolUp },
        error: {},
        details: { database: { status: 'up' }, spool: spoolUp },
      },
    });
    const ready = await request(server).get('/health/ready');
    expect([ready.status, ready.body]).toEqual([
      503,
      { status: 'shutting_down', database: 'up', journal: 'up' },
    ]);
  });
});
