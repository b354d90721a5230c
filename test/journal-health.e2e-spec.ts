import { join } from 'node:path';
import { appendMessage, eventually, faultSuite } from './support/fault-helpers.js';
import { health } from './support/health.js';
import { Filler, mountTmpfs } from './support/tmpfs.js';

// Finding 9 of issue 19: /health must be judged by whether a message can be journaled. The
// spool is on a small tmpfs filled until a message no longer fits but a 2-byte file still does,
// during a database outage (the SQLite write lock held by another process).
const TEST_TIMEOUT_MS = 60_000;
const KIB = 1024;
const MAX_MESSAGE_BYTES = 20_000;
const CONTENT_BYTES = 16_000;
const SAMPLES = 8;

const { cleanups, faultTest, dataDirectory, server, lockDatabase } = faultSuite(TEST_TIMEOUT_MS);

describe('health on a spool disk with room for two bytes but not for a message', () => {
  faultTest(
    'says the spool is down (503 with the database down) while appends are BUFFERED, and up again once a message fits',
    async () => {
      const dataDir = await dataDirectory();
      const disk = await mountTmpfs(1024 * KIB);
      cleanups.add(() => disk.unmount());
      const target = await server({
        DATA_DIR: dataDir,
        SPOOL_DIR: join(disk.path, 'spool'),
        DB_RETRY_INTERVAL_MS: '200',
        MAX_MESSAGE_BYTES: String(MAX_MESSAGE_BYTES),
      });
      const sessionId = 'nearly-full';
      const content = (label: string) => `${label}:`.padEnd(CONTENT_BYTES, '.');
      const holder = await lockDatabase(dataDir);
      expect((await appendMessage(target, sessionId, content('first'))).status).toBe('QUEUED');

      // About 12 KiB left: a page for a 2-byte file, not the ~16 KB line of a message.
      const filler = new Filler(join(disk.path, 'filler'));
      expect(await filler.grow((await disk.freeBytes()) - 12 * KIB)).toBe('grown');
      const free = await disk.freeBytes();
      expect(free).toBeGreaterThanOrEqual(8 * KIB);
      expect(free).toBeLessThan(CONTENT_BYTES);

      for (const label of ['full-1', 'full-2']) {
        const { status } = await appendMessage(target, sessionId, content(label));
        expect({ label, status }).toEqual({ label, status: 'BUFFERED' });
      }
      // Pins: the probe asks for a record's room (statfs), not for two bytes.
      for (let sample = 1; sample <= SAMPLES; sample++) {
        expect({ sample, ...(await health(target)) }).toEqual({
          sample,
          http: 503,
          status: 'error',
          database: 'down',
          spool: 'down',
        });
      }

      await filler.remove();
      await eventually(async () =>
        expect(await health(target)).toEqual({
          http: 200,
          status: 'degraded',
          database: 'down',
          spool: 'up',
        }),
      );
      expect((await appendMessage(target, sessionId, content('after'))).status).toBe('QUEUED');
      await holder.release();
    },
  );
});
