import { chmod, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import {
  appendMessage,
  eventually,
  metricValue,
  occurrences,
  readJournal,
  readTranscript,
} from './support/fault-helpers.js';
import { journalSuite, spoolStatusOf } from './support/journal-suite.js';

// A segment whose mode is 000 for a while (a backup tool, an operator) under a server that is
// not root, as in production: the drain must see an outage of the file, not corruption. Every
// message answered QUEUED ends stored, none is set aside, nothing is deleted meanwhile.
const SESSION = 'outage';
const OTHER = 'bystander';
const CAP = 5;

const { faultTest, lockDatabase, nobodysSpool, startAsNobody } = journalSuite(60_000, {
  MAX_PENDING_PER_SESSION: String(CAP),
  DB_RETRY_INTERVAL_MS: '200',
});
const STATUS = `messages setAsideCount setAside { source reason }
  blocked { source reason records since }`;

describe('a segment that cannot be read for a while', () => {
  faultTest(
    'keeps its QUEUED messages owed, lists it as blocked, logs it once, and stores every one once it reads again',
    async () => {
      const { dataDir, spoolDir } = await nobodysSpool();
      const target = await startAsNobody(dataDir);
      const holder = await lockDatabase(dataDir);

      const sent = Array.from({ length: 20 }, (_, index) => `queued-${index + 1}`);
      for (const content of sent) {
        expect((await appendMessage(target, SESSION, content)).status).toBe('QUEUED');
      }
      const { segments } = await readJournal(spoolDir);
      expect(segments).toHaveLength(1);
      const segment = join(spoolDir, segments[0]);

      // The mode changes under the running server, then the database comes back: the drain
      // of the 15 messages only the disk holds meets EACCES.
      await chmod(segment, 0o000);
      await holder.release();
      // Another session is not held back by it.
      await eventually(
        async () => expect((await appendMessage(target, OTHER, 'fine')).status).toBe('PERSISTED'),
        15_000,
      );

      // The drain met the segment: an outage is logged (or, before, the records were set aside).
      await target.waitForOutput(/cannot be used: segment unreadable|Set aside message/, 15_000);
      expect(target.output()).not.toContain('Set aside');
      const blocked = await eventually(async () => {
        const status = await spoolStatusOf(target, STATUS);
        expect(status.blocked).toEqual([
          {
            source: segments[0],
            reason: expect.stringContaining('EACCES'),
            records: 20,
            since: expect.any(Number),
          },
        ]);
        return status;
      }, 15_000);
      expect(blocked.messages).toBe(20);
      expect(blocked.setAsideCount).toBe(0);
      expect((await target.get('/health')).body.details.spool).toMatchObject({ blocked: 1 });
      expect(metricValue((await target.get('/metrics')).text, 'scribe_spool_blocked')).toBe(1);
      // The session's order is kept: nothing of it is stored past the record it cannot read
      // (the session list is the database's alone). A read of its transcript would need the
      // records the segment holds: refused, not answered with a gap.
      const listed = await target.gql('{ sessions(first: 10) { edges { node { id } } } }');
      expect(listed.data.sessions.edges).toEqual([{ node: { id: OTHER } }]);
      const read = await target.gql(
        'query($id: ID!) { session(id: $id) { messages(first: 100) { totalCount } } }',
        { id: SESSION },
      );
      expect(read.errors?.map((error: any) => error.extensions?.code)).toEqual([
        'JOURNAL_UNAVAILABLE',
      ]);
      // A few more retries fail meanwhile, with one log line for them all.
      await eventually(async () => {
        const metrics = await target.get('/metrics');
        expect(metricValue(metrics.text, 'scribe_spool_blocked')).toBe(1);
        expect(await readdir(spoolDir)).toContain(segments[0]);
      });

      await chmod(segment, 0o600);

      await eventually(async () => {
        expect((await readTranscript(target, SESSION)).contents).toEqual(sent);
      }, 40_000);
      expect(await spoolStatusOf(target, STATUS)).toMatchObject({
        messages: 0,
        setAsideCount: 0,
        setAside: [],
        blocked: [],
      });
      expect(await readdir(spoolDir)).not.toContain('set-aside.jsonl');
      expect(metricValue((await target.get('/metrics')).text, 'scribe_spool_blocked')).toBe(0);
      const metrics = (await target.get('/metrics')).text;
      for (const reason of ['corrupt', 'refused']) {
        expect(metricValue(metrics, `scribe_set_aside_total{reason="${reason}"}`)).toBe(0);
      }
      expect(
        occurrences(target.output(), /ERROR.*cannot be used: segment unreadable: EACCES/),
      ).toBe(1);
      // Logged as the replay begins, on a pipe the reads above can overtake: waited for.
      await target.waitForOutput(/usable again after \d+ ms/);
      expect(occurrences(target.output(), /usable again after \d+ ms/)).toBe(1);
      // A set-aside line is an ERROR, on stderr, which the line above does not order: the whole
      // output is read once the server has stopped and its pipes are closed.
      await target.stop();
      expect(target.output()).not.toContain('Set aside');
    },
  );

  faultTest('shows the blocked gauge at 0 from the start', async () => {
    const { dataDir } = await nobodysSpool();
    const target = await startAsNobody(dataDir);

    expect(metricValue((await target.get('/metrics')).text, 'scribe_spool_blocked')).toBe(0);
    expect((await target.get('/health')).body.details.spool).toEqual({ status: 'up', blocked: 0 });
  });
});
