import {
  PROMISED,
  checkTranscripts,
  describeFindings,
  isClean,
  type SentMessage,
  type StoredMessage,
  type StoredTranscripts,
} from './support/crash-checker.js';
import { CrashFigures } from './support/crash-figures.js';
import {
  KILL_POINTS,
  controlPlan,
  crashPlan,
  describePlan,
  type CrashPlan,
} from './support/crash-plan.js';
import { runCrash } from './support/crash-run.js';
import { checkContract, crashSuite, positiveInteger, seedsFrom } from './support/crash-suite.js';
import { databaseKinds } from './support/databases.js';
import { Cleanups } from './support/fault-helpers.js';

// kill -9 at every place the durability contract names, on real server processes, for many
// seeds: after the clean restart every message answered PERSISTED or QUEUED is stored exactly
// once, in its session's acceptance order. A seed names a run (crash-plan.ts); rerun one with
//   CRASH_SEED_START=<seed> CRASH_SEEDS=1 npm run test:crash
// and run many with CRASH_SEEDS=<n> (npm run test:crash runs 300).
const SEEDS = positiveInteger('CRASH_SEEDS', 30);
const SEED_START = positiveInteger('CRASH_SEED_START', 1);
// The first four kill points are the failpoints, where PostgreSQL's commit path differs most.
const POSTGRES_SEEDS = positiveInteger('CRASH_PG_SEEDS', Math.max(4, Math.ceil(SEEDS / 10)));
// Runs at a time: most of a run is waiting on processes, and two overlap well on two cores.
const CONCURRENCY = positiveInteger('CRASH_CONCURRENCY', 2);
const RUN_TIMEOUT_MS = 180_000;
const CONTROL_SEED = 5;

const figures = new CrashFigures();

afterAll(() => {
  process.stderr.write(figures.summary());
});

const crashTests = crashSuite<CrashPlan>({
  concurrency: CONCURRENCY,
  timeoutMs: RUN_TIMEOUT_MS,
  name: describePlan,
  run: async (plan, cleanups) => {
    const report = await runCrash(plan, cleanups);
    const atReady = checkTranscripts(report.sentBeforeRestart, report.storedAtReady);
    const atEnd = checkTranscripts(report.sent, report.storedAtEnd);
    figures.add(plan, report.kills, atReady, atEnd, report.unplannedExit !== undefined);
    checkContract(atReady, atEnd, report);
  },
  failed: (plan, error) => {
    error.message =
      `${describePlan(plan)}; rerun with CRASH_SEED_START=${plan.seed} CRASH_SEEDS=1` +
      `${plan.database === 'postgres' ? ' CRASH_PG_SEEDS=1' : ''}: ${error.message}`;
  },
  ran: (plan, failed) => figures.ran(plan, failed),
});

describe('the crash checker', () => {
  const session = 's';
  const sent = (id: number, answer: SentMessage['answer']): SentMessage => ({
    sessionId: session,
    clientMessageId: `c${id}`,
    content: `m${id}`,
    sends: [id],
    answer,
  });
  const row = (id: number, orderKey: string): StoredMessage => ({
    id: `id${id}`,
    sessionId: session,
    clientMessageId: `c${id}`,
    content: `m${id}`,
    orderKey,
  });
  const stored = (rows: StoredMessage[]): StoredTranscripts => ({
    messages: rows,
    sessions: [{ id: session, messageCount: rows.length }],
  });
  const clients = [
    sent(1, { status: 'PERSISTED', id: 'id1' }),
    sent(2, { status: 'QUEUED', id: 'id2' }),
    sent(3, null),
    sent(4, { status: 'BUFFERED', id: 'id4' }),
  ];

  it('passes a transcript with every promise kept, an unanswered message stored or not, BUFFERED ones lost', () => {
    expect(isClean(checkTranscripts(clients, stored([row(1, 'a'), row(2, 'b')])))).toBe(true);
    expect(
      isClean(checkTranscripts(clients, stored([row(1, 'a'), row(2, 'b'), row(3, 'c')]))),
    ).toBe(true);
    expect(checkTranscripts(clients, stored([])).acknowledged).toBe(2);
  });

  it('sees a lost promise, a duplicate, a message out of order, one no client sent, and a wrong counter', () => {
    expect(checkTranscripts(clients, stored([row(1, 'a')])).lost).toEqual([clients[1]]);
    expect(
      checkTranscripts(clients, stored([row(1, 'a'), row(2, 'b'), row(4, 'd')]), [
        ...PROMISED,
        'BUFFERED',
      ]).lost,
    ).toEqual([]);
    expect(
      checkTranscripts(clients, stored([row(1, 'a'), row(2, 'b')]), [...PROMISED, 'BUFFERED']).lost,
    ).toEqual([clients[3]]);
    const again = { ...row(2, 'c'), id: 'other' };
    expect(checkTranscripts(clients, stored([row(1, 'a'), row(2, 'b'), again])).duplicated).toEqual(
      [again],
    );
    expect(
      checkTranscripts(clients, stored([row(2, 'a'), row(1, 'b')])).outOfOrder.map(
        ({ row: late }) => late.clientMessageId,
      ),
    ).toEqual(['c1']);
    expect(
      checkTranscripts(clients, stored([row(1, 'a'), row(2, 'b'), row(9, 'c')])).unexpected,
    ).toHaveLength(1);
    expect(
      checkTranscripts(clients, {
        messages: [row(1, 'a'), row(2, 'b')],
        sessions: [{ id: session, messageCount: 3 }],
      }).miscounted,
    ).toHaveLength(1);
  });

  it('places a retried message at any of its sends, and a message sent once at its one send', () => {
    // c3 got no answer at a kill; c4 and c5 were sent after it, then c3 again (its 6th send).
    const retried = [
      sent(1, { status: 'PERSISTED', id: 'id1' }),
      sent(2, { status: 'PERSISTED', id: 'id2' }),
      { ...sent(3, { status: 'PERSISTED', id: 'id3' }), sends: [3, 6] },
      sent(4, { status: 'QUEUED', id: 'id4' }),
      sent(5, { status: 'QUEUED', id: 'id5' }),
    ];
    const order = (...ids: number[]) =>
      checkTranscripts(retried, stored(ids.map((id) => row(id, `k${id}`)))).outOfOrder.map(
        ({ row: late }) => late.clientMessageId,
      );
    // Accepted at its first send (journaled before the kill), or afresh at its retry.
    expect(order(1, 2, 3, 4, 5)).toEqual([]);
    expect(order(1, 2, 4, 5, 3)).toEqual([]);
    // No one send per message explains these: c3 between c4 and c5, c5 before c4, c2 after c3.
    expect(order(1, 2, 4, 3, 5)).toEqual(['c5']);
    expect(order(1, 2, 3, 5, 4)).toEqual(['c4']);
    expect(order(1, 3, 2, 4, 5)).toEqual(['c2']);
  });
});

describe('crash control: an unwritable spool makes BUFFERED answers, which a kill -9 loses', () => {
  it(
    'the checker reports them lost when they are counted as promises (and nothing promised is lost)',
    async () => {
      const plan = controlPlan(CONTROL_SEED);
      const cleanups = new Cleanups();
      try {
        await cleanups.guard(async () => {
          const report = await runCrash(plan, cleanups, { unwritableSpool: true });
          const buffered = report.sentBeforeRestart.filter(
            (message) => message.answer?.status === 'BUFFERED',
          );
          const asPromises = checkTranscripts(report.sentBeforeRestart, report.storedAtReady, [
            ...PROMISED,
            'BUFFERED',
          ]);
          figures.control =
            `SPOOL_DIR under a regular file, killed after ${plan.killAfterAnswers} outage answer(s): ` +
            `${buffered.length} BUFFERED counted as promises, ${asPromises.lost.length} lost (seen)`;
          expect(buffered.length).toBeGreaterThan(0);
          expect(asPromises.lost.length).toBeGreaterThan(0);
          // As answered, nothing was promised that is not kept.
          const asAnswered = checkTranscripts(report.sentBeforeRestart, report.storedAtReady);
          expect(describeFindings(asAnswered)).toBe('');
        });
      } finally {
        await cleanups.run();
      }
    },
    RUN_TIMEOUT_MS,
  );
});

describe(`crash runs on SQLite (seeds ${SEED_START} to ${SEED_START + SEEDS - 1})`, () => {
  crashTests(seedsFrom(SEED_START, SEEDS).map((seed) => crashPlan(seed, 'sqlite')));

  it('killed the server at every kill point', () => {
    if (SEEDS < KILL_POINTS.length) return;
    const missed = KILL_POINTS.filter((point) => !figures.killsAt.get(point));
    expect(missed).toEqual([]);
  });
});

// databaseKinds() says once, on stderr, why PostgreSQL is left out.
const describeOnPostgres = databaseKinds().includes('postgres') ? describe : describe.skip;

describeOnPostgres(
  `crash runs on PostgreSQL through a TCP proxy (seeds ${SEED_START} to ${SEED_START + POSTGRES_SEEDS - 1})`,
  () => {
    crashTests(seedsFrom(SEED_START, POSTGRES_SEEDS).map((seed) => crashPlan(seed, 'postgres')));
  },
);
