import { NestFactory } from '@nestjs/core';
import { type INestApplicationContext } from '@nestjs/common';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { config as rxjsConfig } from 'rxjs';
import { SessionQueries } from '../src/database/session-queries.js';
import { ScribeModule } from '../src/scribe.module.js';
import { TranscriptService } from '../src/transcript/transcript.service.js';

// A Nest team's worker or script may run Scribe's module in a standalone application context,
// without HTTP. Found by `npm run bench -- gate`: ScribeHttpFront, ScribeHttpModule and the
// WebSocket server read the HTTP adapter such a context does not have: the start failed, and
// RxJS threw ScribeHttpFront's TypeError out of band, which kills the process.
describe('ScribeModule in an application context without HTTP', () => {
  let dataDir: string;
  let app: INestApplicationContext | undefined;
  const unhandled: unknown[] = [];
  const before = rxjsConfig.onUnhandledError;

  beforeAll(async () => {
    rxjsConfig.onUnhandledError = (error) => unhandled.push(error);
    dataDir = await mkdtemp(join(tmpdir(), 'scribe-context-'));
    app = await NestFactory.createApplicationContext(ScribeModule.forRoot({ dataDir }), {
      logger: ['error'],
    });
    // RxJS reports a subscriber's error on a timer of its own, set while the context started.
    await new Promise((resolve) => setTimeout(resolve, 0));
  });

  afterAll(async () => {
    await app?.close();
    rxjsConfig.onUnhandledError = before;
    await rm(dataDir, { recursive: true, force: true });
  });

  it('starts, with nothing thrown out of band', () => {
    expect(unhandled).toEqual([]);
  });

  it("appends and reads through Scribe's services", async () => {
    const appended = await app!
      .get(TranscriptService)
      .append('worker-1', [{ role: 'USER', content: 'from a worker' }] as never[]);
    expect(appended.messages.map((message) => message.status)).toEqual(['PERSISTED']);
    const session = await app!.get(SessionQueries).findMetadata('worker-1');
    expect(session?.messageCount).toBe(1);
  });
});
