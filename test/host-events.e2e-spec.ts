import { Injectable, Module } from '@nestjs/common';
import { EventEmitterModule, OnEvent } from '@nestjs/event-emitter';
import { Test } from '@nestjs/testing';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createScribeTestingModule, type ScribeTesting } from '../src/kit/index.js';
import { MESSAGES_STORED_EVENT, type MessagesStored } from '../src/message/message-events.js';
import { ScribeModule } from '../src/scribe.module.js';
import { TranscriptService } from '../src/transcript/transcript.service.js';

@Injectable()
class StoredListener {
  readonly received: MessagesStored[] = [];

  @OnEvent(MESSAGES_STORED_EVENT)
  stored(event: MessagesStored): void {
    this.received.push(event);
  }
}

// The host's own events: its EventEmitterModule.forRoot() beside the one Scribe registers.
@Module({ imports: [EventEmitterModule.forRoot()], providers: [StoredListener] })
class HostEventsModule {}

describe("a host's listener of Scribe's events", () => {
  let sut: ScribeTesting;

  beforeAll(async () => {
    sut = await createScribeTestingModule({ imports: [HostEventsModule], listen: false });
  });

  afterAll(() => sut?.close());

  it('receives the stored messages of an append exactly once', async () => {
    const answer = await sut.app.get(TranscriptService).append('events-1', [
      { role: 'USER', content: 'one' },
      { role: 'ASSISTANT', content: 'two' },
    ] as never[]);
    expect(answer.status).toBe('PERSISTED');
    // Let any second delivery arrive before counting.
    await new Promise((resolve) => setTimeout(resolve, 100));
    const listener = sut.app.get(StoredListener);
    expect(listener.received).toHaveLength(1);
    expect(listener.received[0].sessionId).toBe('events-1');
    expect(listener.received[0].messages.map((message) => message.content)).toEqual(['one', 'two']);
  });
});

@Injectable()
class HostSettings {
  readonly dataDir: Promise<string> = mkdtemp(join(tmpdir(), 'scribe-async-'));
  readonly maxQueryAliases = 3;
}

@Module({ providers: [HostSettings], exports: [HostSettings] })
class HostSettingsModule {}

describe('ScribeModule.forRootAsync', () => {
  it('takes its options from an injected host provider', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [
        ScribeModule.forRootAsync({
          imports: [HostSettingsModule],
          inject: [HostSettings],
          useFactory: async (settings: HostSettings) => ({
            dataDir: await settings.dataDir,
            limits: { maxQueryAliases: settings.maxQueryAliases },
          }),
        }),
      ],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: ['fatal'] });
    await app.listen(0, '127.0.0.1');
    const dataDir = await app.get(HostSettings).dataDir;
    try {
      const url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
      const aliases = Array.from(
        { length: 4 },
        (_, i) => `a${i}: sessions(first: 1) { totalCount }`,
      );
      const response = await fetch(`${url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: `{ ${aliases.join(' ')} }` }),
      });
      const body = (await response.json()) as { errors?: { message: string }[] };
      // The host's limit (3), not Scribe's default (30).
      expect(body.errors?.[0].message).toMatch(/Aliases limit of 3 exceeded/);
    } finally {
      await app.close();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

describe('ScribeModule.forRootAsync, its factory giving graphql.mode', () => {
  const start = (module: ReturnType<typeof ScribeModule.forRootAsync>): Promise<unknown> =>
    Test.createTestingModule({ imports: [module] })
      .compile()
      .catch((caught: unknown) => caught);

  it.each([
    [undefined, 'host'],
    ['host', 'own'],
  ] as const)('refuses a module for %p whose factory says %p, in one line', async (mode, said) => {
    const error = (await start(
      ScribeModule.forRootAsync({
        ...(mode ? { graphql: { mode } } : {}),
        useFactory: () => ({ dataDir: '/nonexistent/never-made', graphql: { mode: said } }),
      }),
    )) as Error;
    expect(error).toBeInstanceOf(Error);
    expect(error.message).toBe(
      `Invalid Scribe option graphql.mode: must be given to forRootAsync itself (forRootAsync({ graphql: { mode }, useFactory })), not by its factory: Scribe was assembled for '${mode ?? 'own'}' before the factory ran (got "${said}")`,
    );
  });
});

describe('a bad Scribe option', () => {
  it('fails the start with one line naming the option', async () => {
    const start = Test.createTestingModule({
      imports: [ScribeModule.forRoot({ limits: { maxBodyBytes: 5 } })],
    }).compile();
    const error = (await start.catch((caught: unknown) => caught)) as Error;
    expect(error).toBeInstanceOf(Error);
    expect(error.message).toMatch(/^Invalid Scribe option limits\.maxBodyBytes: /);
    expect(error.message).not.toContain('\n');
  });
});
