import { chmodSync, readFileSync, readdirSync, statSync, unlinkSync } from 'node:fs';
import { chown, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { formatSegmentName, parseSegmentName } from '../../src/spool/segment-names.js';
import { scanSegment } from '../../src/spool/segment-scan.js';
import { checkTranscripts, isClean, type SentMessage } from './crash-checker.js';
import { type CrashDatabase } from './crash-database.js';
import { type CrashFault, type FaultEffects } from './crash-fault-hooks.js';
import { type FaultPlan } from './crash-fault-plan.js';
import { eventually, type Cleanups } from './fault-helpers.js';
import { fakeClockEnv } from './faketime.js';
import { health } from './health.js';
import { type ServerProcess } from './server-process.js';

/** The user the server runs as where root would read a mode 000 file all the same. */
export const UNPRIVILEGED = { uid: 65534, gid: 65534 };
// How long a fault run waits for what a restart owes to be stored once the fault is over.
const SETTLE_TIMEOUT_MS = 20_000;
const DELETE = `mutation($id: ID!) { deleteSession(id: $id) { id deleted } }`;
const ADMIN_TOKEN = 'crash-admin';
// A dead owner no instance will ever be (instance ids are random).
const FAKE_OWNER = 'deadbeef';

/** The hooks that apply `plan.fault` to a crash run, and what it did. */
export function journalFault(
  plan: FaultPlan,
  cleanups: Cleanups,
): { fault: CrashFault; effects: FaultEffects } {
  let spoolDir = '';
  const { fault, effects } = faultHooks(plan, () => spoolDir, cleanups);
  const prepare = async (dataDir: string, spool: string) => {
    spoolDir = spool;
    await fault.prepare?.(dataDir, spool);
  };
  return { fault: { ...fault, prepare }, effects };
}

function faultHooks(
  plan: FaultPlan,
  spool: () => string,
  cleanups: Cleanups,
): { fault: CrashFault; effects: FaultEffects } {
  const effects: FaultEffects = {
    applied: false,
    vanishedIds: new Set(),
    deleted: new Set(),
    notes: [],
  };
  const outageAnswers = plan.sessions * plan.outage;
  switch (plan.fault) {
    case 'segment-unreadable': {
      let restore: (() => void) | null = null;
      let restored: Promise<void> | null = null;
      // Unreadable until faultMs after the outage's last answer, or after the kill if that
      // comes first: the drain that follows the outage, or a restart's boot replay, meets it.
      const restoreLater = () => {
        if (!restore || restored) return;
        restored = new Promise((resolveRestore) => {
          const timer = setTimeout(() => resolveRestore(restore?.()), plan.faultMs);
          cleanups.add(() => Promise.resolve(clearTimeout(timer)));
        });
      };
      return {
        effects,
        fault: {
          runAs: UNPRIVILEGED,
          prepare: (dataDir) => chown(dataDir, UNPRIVILEGED.uid, UNPRIVILEGED.gid),
          onOutageAnswer(answers) {
            if (answers === plan.faultAfterAnswers) {
              // The oldest segment: it holds the messages that left memory, which the drain reads.
              const name = segments(spool())[0];
              if (name === undefined) return void effects.notes.push('no segment to chmod');
              const path = join(spool(), name);
              const mode = statSync(path).mode & 0o7777;
              chmodSync(path, 0o000);
              effects.applied = true;
              effects.notes.push(`chmod 000 ${name} of ${segments(spool()).length} segment(s)`);
              restore = () => {
                restore = null;
                try {
                  chmodSync(path, mode);
                } catch (error) {
                  if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
                  effects.notes.push(`${name} was deleted while unreadable`);
                }
              };
            }
            if (answers === outageAnswers) restoreLater();
          },
          afterKill: () => Promise.resolve(restoreLater()),
          // Records owed in an unreadable segment are written back once it reads again.
          async afterReady(database, sentBeforeRestart) {
            await restored;
            await settle(database, sentBeforeRestart, effects, 'restart');
          },
        },
      };
    }
    case 'segment-vanished':
      return {
        effects,
        fault: {
          onOutageAnswer(answers) {
            if (answers !== plan.faultAfterAnswers) return;
            const name = segments(spool()).at(-1);
            if (name === undefined) return void effects.notes.push('no segment to unlink');
            const path = join(spool(), name);
            // Read and unlinked in one turn of the event loop: no answer comes between them.
            for (const { record } of scanSegment(readFileSync(path)).records) {
              effects.vanishedIds.add(record.id);
            }
            unlinkSync(path);
            effects.applied = true;
            effects.notes.push(`unlinked ${name} holding ${effects.vanishedIds.size} record(s)`);
          },
        },
      };
    case 'clock-jump': {
      const fakeClock = fakeClockEnv({ offset: `+${plan.clockAheadS}` });
      return {
        effects,
        fault: {
          env: (run): Record<string, string> => ({
            ADMIN_TOKEN,
            ...(run === 'first' ? fakeClock : {}),
          }),
          async afterHealthy(first, workload) {
            const client = workload.clients[0];
            const answer = await first.gql(
              DELETE,
              { id: client.sessionId },
              { authorization: `Bearer ${ADMIN_TOKEN}` },
            );
            if (answer.data?.deleteSession?.deleted !== true) {
              throw new Error(`deleteSession answered ${JSON.stringify(answer.body)}`);
            }
            for (const message of client.sent) effects.deleted.add(message.clientMessageId);
            effects.applied = true;
          },
          async restartPhase(restarted, workload, database) {
            // Messages accepted with the clock right after the deletion made while it was
            // ahead, held in the journal: the write-back must store every one.
            await database.beginOutage();
            await workload.run(restarted, 'restart-outage', 2);
            await database.endOutage();
            const queued = workload
              .sent()
              .filter((message) => message.phase === 'restart-outage' && message.answer);
            await settle(database, queued, effects, 'restart outage');
          },
        },
      };
    }
    case 'bad-lock':
      return {
        effects,
        fault: {
          async beforeCleanRestart() {
            await mkdir(spool(), { recursive: true });
            await mkdir(join(spool(), `owner-${FAKE_OWNER}.lock`));
            // An empty segment of that owner: adoption tries an owner's lock for its segments.
            await writeFile(join(spool(), formatSegmentName(1, 0, FAKE_OWNER)), '');
            effects.applied = true;
          },
        },
      };
    case 'start-cut': {
      let restored: Promise<void> | null = null;
      return {
        effects,
        fault: {
          async beforeCleanRestart(database) {
            await database.beginOutage();
            effects.applied = true;
            restored = new Promise((resolveRestore, rejectRestore) => {
              const timer = setTimeout(() => {
                database.endOutage().then(resolveRestore, rejectRestore);
              }, plan.faultMs);
              cleanups.add(() => Promise.resolve(clearTimeout(timer)));
            });
          },
          env: (run): Record<string, string> => (run === 'restart' ? { ADMIN_TOKEN } : {}),
          // Ready may come before the database answers: what is owed is written back after.
          async afterReady(database, sentBeforeRestart, restarted) {
            await restored;
            await settle(database, sentBeforeRestart, effects, 'restart');
            // The proxy is open again, but the server retries its start on its own schedule:
            // appends made before it has reconnected are journaled and answered QUEUED, truly.
            // The after-restart appends are to be PERSISTED, so they wait until it says so.
            await untilWritable(restarted);
          },
        },
      };
    }
  }
}

const WRITABLE = '{ pendingStatus { databaseWritable sessions { sessionId } } }';

/** Waits until `server` commits a heartbeat and holds nothing back from the database. */
async function untilWritable(server: ServerProcess): Promise<void> {
  await eventually(
    async () => {
      const probe = await health(server);
      if (probe.database !== 'up') throw new Error(`/health says ${JSON.stringify(probe)}`);
      const answer = await server.gql(WRITABLE, {}, { authorization: `Bearer ${ADMIN_TOKEN}` });
      const status = answer.data?.pendingStatus;
      if (status?.databaseWritable !== true || status.sessions.length > 0) {
        throw new Error(`pendingStatus says ${JSON.stringify(answer.body)}`);
      }
    },
    SETTLE_TIMEOUT_MS,
    100,
  );
}

/** The journal segments in `spoolDir`, oldest first. */
function segments(spoolDir: string): string[] {
  return readdirSync(spoolDir)
    .filter((name) => parseSegmentName(name) !== null)
    .sort();
}

/**
 * Waits until the database holds every promise of `sent` (the write-back after a fault runs
 * in the background), or notes that it did not within the deadline; the run's own check then
 * says what is missing.
 */
async function settle(
  database: CrashDatabase,
  sent: SentMessage[],
  effects: FaultEffects,
  what: string,
): Promise<void> {
  const owed = sent.filter((message) => !effects.deleted.has(message.clientMessageId));
  try {
    await eventually(
      async () => {
        const check = checkTranscripts(owed, await database.read());
        if (check.lost.length > 0) throw new Error(`${check.lost.length} not stored yet`);
        return isClean(check);
      },
      SETTLE_TIMEOUT_MS,
      200,
    );
  } catch {
    effects.notes.push(`the ${what}'s promises were not all stored within ${SETTLE_TIMEOUT_MS} ms`);
  }
}
