import { Controller, Get, Module, type INestApplication, type LoggerService } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { currentRequestId } from '../src/index.js';
import { ScribeModule } from '../src/scribe.module.js';
import { temporaryDataDir } from './support/server-process.js';

@Controller()
class HostController {
  @Get('hello')
  hello(): { hello: string } {
    return { hello: 'world' };
  }
}

@Module({ controllers: [HostController] })
class HostModule {}

/** A host's own logger: it records each line with the request id the package exports. */
class HostLogger implements LoggerService {
  readonly lines: { level: string; message: unknown; requestId: string | undefined }[] = [];
  private record(level: string, message: unknown) {
    this.lines.push({ level, message, requestId: currentRequestId() });
  }
  log = (message: unknown) => this.record('log', message);
  warn = (message: unknown) => this.record('warn', message);
  error = (message: unknown) => this.record('error', message);
  debug = (message: unknown) => this.record('debug', message);
  verbose = (message: unknown) => this.record('verbose', message);
  fatal = (message: unknown) => this.record('fatal', message);
}

// In a host's app the logger is the host's: Scribe's request ids and access lines still work,
// written through it, and the host's own routes are left alone.
describe("Scribe's request ids and access lines in a host's app", () => {
  let app: INestApplication;
  let logger: HostLogger;
  let dataDir: { path: string; remove: () => Promise<void> };

  beforeAll(async () => {
    dataDir = await temporaryDataDir();
    logger = new HostLogger();
    const moduleRef = await Test.createTestingModule({
      imports: [
        ScribeModule.forRoot({ dataDir: dataDir.path, logging: { access: true } }),
        HostModule,
      ],
    }).compile();
    app = moduleRef.createNestApplication({ logger });
    await app.init();
  });

  afterAll(async () => {
    await app.close();
    await dataDir.remove();
  });

  it("sends the id back and writes the access line through the host's logger, at log", async () => {
    const answer = await request(app.getHttpServer())
      .post('/graphql')
      .set({ 'content-type': 'application/json', 'x-request-id': 'host-req-1' })
      .send({ query: 'query HostAsks { __typename }' });

    expect(answer.status).toBe(200);
    expect(answer.headers['x-request-id']).toBe('host-req-1');
    await new Promise((resolve) => setImmediate(resolve));
    expect(logger.lines.filter((line) => line.requestId === 'host-req-1')).toEqual([
      {
        level: 'log',
        message: expect.stringMatching(/^POST \/graphql HostAsks 200 \d+\.\d ms$/),
        requestId: 'host-req-1',
      },
    ]);
  });

  it("leaves the host's own routes without Scribe's id", async () => {
    const answer = await request(app.getHttpServer()).get('/hello').set('x-request-id', 'host-2');
    expect(answer.body).toEqual({ hello: 'world' });
    expect(answer.headers['x-request-id']).toBeUndefined();
  });
});
