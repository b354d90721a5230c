import { Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createScribeTestingModule } from '../src/kit/index.js';
import { ScribeModule } from '../src/scribe.module.js';
import { TranscriptService } from '../src/transcript/transcript.service.js';

// A data directory Scribe cannot use fails the start at once, one line naming the option and
// the OS's reason: '/proc/x' used to hang the start (Node's recursive mkdir never settled),
// '/dev/null' to start degraded. And one app holds one Scribe.

/** How a start of the kit ended: its error's message, or 'started'. */
async function kitStart(options: Parameters<typeof createScribeTestingModule>[0]) {
  const begun = Date.now();
  const outcome = await createScribeTestingModule({ listen: false, ...options }).then(
    async (sut) => {
      await sut.close();
      return 'started';
    },
    (error: unknown) => (error as Error).message,
  );
  return { outcome, ms: Date.now() - begun };
}

describe('a data directory Scribe cannot use', () => {
  let root: string;

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'scribe-start-checks-'));
  });

  afterAll(() => rm(root, { recursive: true, force: true }));

  it.each([
    ['/proc/x', "cannot be created (ENOENT: no such file or directory, mkdir '/proc/x')"],
    ['/dev/null', 'not a directory'],
  ])('fails forRoot with dataDir %s at once, naming it', async (dataDir, reason) => {
    const { outcome, ms } = await kitStart({ options: { dataDir } });

    expect(outcome).toBe(`Scribe option dataDir (${dataDir}): ${reason}`);
    expect(ms).toBeLessThan(10_000);
  });

  it('fails forRoot with a spoolDir that cannot be created, naming spoolDir', async () => {
    const { outcome } = await kitStart({ options: { dataDir: root, spoolDir: '/proc/y' } });

    expect(outcome).toBe(
      "Scribe option spoolDir (/proc/y): cannot be created (ENOENT: no such file or directory, mkdir '/proc/y')",
    );
  });

  it.each(['/proc/x', '/dev/null'])(
    'fails `npm start` with DATA_DIR=%s: exit 1 and one line naming the option',
    async (dataDir) => {
      const child = spawn(process.execPath, [resolve('dist/main.js')], {
        env: { PATH: process.env.PATH ?? '', PORT: '0', NO_COLOR: '1', DATA_DIR: dataDir },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
      child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      // 'close', not 'exit': the line looked for is the last the process prints.
      const code = await new Promise<number | null>((done) => child.once('close', done));
      clearTimeout(timer);

      expect(code).toBe(1);
      const failed = output.split('\n').filter((line) => line.includes('Failed to start'));
      expect(failed).toHaveLength(1);
      expect(failed[0]).toMatch(
        new RegExp(`Failed to start: Scribe option dataDir \\(${dataDir}\\): `),
      );
      expect(output).not.toMatch(/^\s+at /m);
    },
  );
});

describe('ScribeModule imported twice', () => {
  let dirs: string[];

  beforeEach(async () => {
    dirs = [
      await mkdtemp(join(tmpdir(), 'scribe-twice-')),
      await mkdtemp(join(tmpdir(), 'scribe-twice-')),
    ];
  });

  afterEach(() => Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true }))));

  it('fails the start when two host modules each call forRoot with different options', async () => {
    @Module({ imports: [ScribeModule.forRoot({ dataDir: dirs[0] })] })
    class ChatModule {}
    @Module({ imports: [ScribeModule.forRoot({ dataDir: dirs[1], development: true })] })
    class BillingModule {}

    const { outcome } = await kitStart({
      options: { dataDir: dirs[0] },
      imports: [ChatModule, BillingModule],
    });

    expect(outcome).toMatch(
      /^ScribeModule is imported more than once with different options \(3 forRoot calls\); import ScribeModule\.forRoot once, in the root module/,
    );
    expect(outcome).not.toContain('\n');
  });

  it('fails the start of two forRoot calls with the same options too (two Scribes, one directory)', async () => {
    @Module({ imports: [ScribeModule.forRoot({ dataDir: dirs[0] })] })
    class ChatModule {}
    @Module({ imports: [ScribeModule.forRoot({ dataDir: dirs[0] })] })
    class BillingModule {}
    const moduleRef = await Test.createTestingModule({
      imports: [ChatModule, BillingModule],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: ['fatal'] });
    try {
      await expect(app.init()).rejects.toThrow(
        /^ScribeModule is imported more than once \(2 forRoot calls with the same options/,
      );
    } finally {
      await app.close();
    }
  });

  it('starts one Scribe when one forRoot module is imported by two host modules', async () => {
    const scribe = ScribeModule.forRoot({ dataDir: dirs[1] });
    @Module({ imports: [scribe] })
    class ChatModule {}
    @Module({ imports: [scribe] })
    class BillingModule {}
    @Module({ imports: [ChatModule, BillingModule, scribe] })
    class RootModule {}
    const moduleRef = await Test.createTestingModule({ imports: [RootModule] }).compile();
    const app = moduleRef.createNestApplication({ logger: ['fatal'] });
    try {
      await app.init();
      const answer = await app
        .get(TranscriptService)
        .append('twice-1', [{ role: 'USER', content: 'one Scribe' }] as never[]);
      expect(answer.status).toBe('PERSISTED');
    } finally {
      await app.close();
    }
  });
});
