import { spawn } from 'node:child_process';
import { readFile, readdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseSegmentName } from '../../src/spool/segment-names.js';
import { scanSegment } from '../../src/spool/segment-scan.js';
import {
  literally,
  startServer,
  temporaryDataDir,
  type ServerProcess,
  type StartOptions,
} from './server-process.js';

const LOCK_HOLDER = resolve('test/support/sqlite-lock-holder.js');

export const APPEND = `mutation($input: AppendMessageInput!) {
  appendMessage(input: $input) { status message { id } }
}`;
export const READ = `query($id: ID!) {
  session(id: $id) { messageCount messages(first: 1000) { edges { node { id content status } } } }
}`;

/**
 * Retries `check` every `intervalMs` until it returns without throwing, for at most
 * `timeoutMs`; then fails with the last error. For conditions the test can observe.
 */
export async function eventually<T>(
  check: () => T | Promise<T>,
  timeoutMs = 5000,
  intervalMs = 75,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      lastError = error;
    }
    if (Date.now() >= deadline) break;
    await new Promise((resolveDelay) => setTimeout(resolveDelay, intervalMs));
  }
  const reason = lastError instanceof Error ? lastError.message : String(lastError);
  throw new Error(`condition not met within ${timeoutMs} ms; last failure:\n${reason}`);
}

/**
 * Runs registered clean-ups in reverse order; every one runs even when others fail. Also keeps
 * the output of the processes a test started, to attach to the test's failure.
 */
export class Cleanups {
  private readonly steps: (() => Promise<unknown>)[] = [];
  private readonly outputs: { label: string; output: () => string }[] = [];

  add(step: () => Promise<unknown>): void {
    this.steps.push(step);
  }

  /** `output` is printed with the failure of the test body run by guard(). */
  showOnFailure(label: string, output: () => string): void {
    this.outputs.push({ label, output });
  }

  /** Runs a test body; when it fails, appends the tail of every registered output to the error. */
  async guard(body: () => Promise<void>): Promise<void> {
    try {
      await body();
    } catch (error) {
      if (error instanceof Error) {
        for (const { label, output } of this.outputs) {
          error.message += `\n--- ${label} (last 6000 characters) ---\n${output().slice(-6000)}`;
        }
      }
      throw error;
    }
  }

  async run(): Promise<void> {
    const errors: unknown[] = [];
    this.outputs.length = 0;
    while (this.steps.length > 0) {
      const step = this.steps.pop() as () => Promise<unknown>;
      try {
        await step();
      } catch (error) {
        errors.push(error);
      }
    }
    if (errors.length > 0) throw errors[0];
  }
}

/** What a fault suite's tests start with: each is cleaned up after the test, whatever happens. */
export interface FaultSuite {
  cleanups: Cleanups;
  /** A test with a bound, whose failure carries the output of the servers it started. */
  faultTest: (name: string, body: () => Promise<void>) => void;
  /** A temporary data directory, removed after the test. */
  dataDirectory: () => Promise<string>;
  /** The built server as a real process, with the suite's settings under `env`; killed after. */
  server: (env: Record<string, string>, options?: StartOptions) => Promise<ServerProcess>;
  /** The SQLite write lock of `dataDir`'s database, held by another process until released. */
  lockDatabase: (dataDir: string) => Promise<SqliteLockHolder>;
}

/**
 * Registers the per-test clean-up of a fault suite and returns its helpers. `serverDefaults`
 * are the settings every server of the suite starts with (a test's own come on top).
 */
export function faultSuite(
  timeoutMs: number,
  serverDefaults: Record<string, string> = {},
): FaultSuite {
  const cleanups = new Cleanups();
  afterEach(() => cleanups.run());
  return {
    cleanups,
    faultTest: (name, body) => it(name, () => cleanups.guard(body), timeoutMs),
    dataDirectory: async () => {
      const dataDir = await temporaryDataDir();
      cleanups.add(dataDir.remove);
      return dataDir.path;
    },
    server: async (env, options) => {
      const started = await startServer({ ...serverDefaults, ...env }, options);
      cleanups.showOnFailure(`server pid ${started.child.pid}`, () => started.output());
      // SIGKILL only reaches a server the test did not stop itself.
      cleanups.add(() => started.stop('SIGKILL'));
      return started;
    },
    lockDatabase: async (dataDir) => {
      const holder = await holdSqliteLock(join(dataDir, 'scribe.sqlite'));
      cleanups.add(() => holder.kill());
      return holder;
    },
  };
}

/** Appends one USER message and returns the answer; fails on any GraphQL error. */
export type AppendStatus = 'PERSISTED' | 'QUEUED' | 'BUFFERED';

export async function appendMessage(
  server: ServerProcess,
  sessionId: string,
  content: string,
  clientMessageId?: string,
): Promise<{ status: AppendStatus; id: string }> {
  const response = await server.gql(APPEND, {
    input: { sessionId, role: 'USER', content, ...(clientMessageId ? { clientMessageId } : {}) },
  });
  if (response.errors || !response.data?.appendMessage) {
    throw new Error(`append of ${content} failed: ${JSON.stringify(response.body)}`);
  }
  const { status, message } = response.data.appendMessage;
  return { status, id: message.id };
}

export interface StoredTranscript {
  messageCount: number | null;
  ids: string[];
  contents: string[];
}

/** What the database holds for the session (reads show stored messages only). */
export async function readTranscript(
  server: ServerProcess,
  sessionId: string,
): Promise<StoredTranscript> {
  const response = await server.gql(READ, { id: sessionId });
  if (response.errors) throw new Error(`read failed: ${JSON.stringify(response.errors)}`);
  const session = response.data?.session;
  if (!session) return { messageCount: null, ids: [], contents: [] };
  // Only what is stored: a read also lists what this instance holds for the database (QUEUED,
  // BUFFERED), and these checks are about what the database has.
  const nodes = session.messages.edges
    .map((edge: any) => edge.node)
    .filter((node: any) => node.status === 'PERSISTED');
  return {
    messageCount: session.messageCount,
    ids: nodes.map((node: any) => node.id),
    contents: nodes.map((node: any) => node.content),
  };
}

export interface JournalLine {
  segment: string;
  sessionId: string;
  id: string;
  content: string;
  orderKey: string;
}

/**
 * The records in the journal segments of a spool directory, in segment and line order, read
 * with the journal's own parser; bad lines are left out (`badLines` counts them).
 */
export async function readJournal(
  spoolDir: string,
): Promise<JournalLine[] & { badLines: number; segments: string[] }> {
  let names: string[];
  try {
    names = await readdir(spoolDir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    names = [];
  }
  const segments = names.filter((name) => parseSegmentName(name) !== null).sort();
  const lines: JournalLine[] = [];
  let badLines = 0;
  for (const segment of segments) {
    const scan = scanSegment(await readFile(join(spoolDir, segment)));
    badLines += scan.bad.length;
    for (const { record } of scan.records) {
      lines.push({
        segment,
        sessionId: record.sessionId,
        id: record.id,
        content: record.content,
        orderKey: record.orderKey,
      });
    }
  }
  return Object.assign(lines, { badLines, segments });
}

/** The value of an unlabelled Prometheus sample in a /metrics text, or undefined. */
export function metricValue(metricsText: string, name: string): number | undefined {
  const line = metricsText.split('\n').find((candidate) => candidate.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}

/** How many times `needle` occurs in `text`. */
export function occurrences(text: string, needle: string | RegExp): number {
  const pattern =
    typeof needle === 'string'
      ? new RegExp(literally(needle), 'g')
      : new RegExp(needle.source, 'g');
  return text.match(pattern)?.length ?? 0;
}

export interface SqliteLockHolder {
  pid: number | undefined;
  /** Commits and closes in the holder process; resolves once it said RELEASED and exited 0. */
  release(): Promise<void>;
  /** SIGKILLs the holder if it still runs (the OS drops its lock); for clean-up. */
  kill(): Promise<void>;
}

/**
 * Starts `sqlite-lock-holder.js` on `databaseFile` and resolves once it holds the write lock
 * (it printed LOCKED). Rejects if it exits or has not locked within `timeoutMs`.
 */
export async function holdSqliteLock(
  databaseFile: string,
  timeoutMs = 10_000,
): Promise<SqliteLockHolder> {
  const child = spawn(process.execPath, [LOCK_HOLDER, databaseFile], {
    env: { PATH: process.env.PATH ?? '' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  const listeners = new Set<() => void>();
  const notify = () => listeners.forEach((listener) => listener());
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString('utf8');
    notify();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  // Writing RELEASE to a holder that already died must not crash the test process.
  child.stdin.on('error', () => undefined);
  // 'close' comes after the process exited and its output was read to the end.
  let closed = false;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>(
    (resolveExit) =>
      child.once('close', (code, signal) => {
        closed = true;
        resolveExit({ code, signal });
        notify();
      }),
  );

  const waitFor = (line: string, what: string) =>
    new Promise<void>((resolveWait, rejectWait) => {
      const check = () => {
        if (stdout.split('\n').includes(line)) finish();
        else if (closed) finish(new Error(`lock holder exited before ${what}:\n${stderr}`));
      };
      const timer = setTimeout(
        () => finish(new Error(`lock holder not ${what} within ${timeoutMs} ms:\n${stderr}`)),
        timeoutMs,
      );
      const finish = (error?: Error) => {
        clearTimeout(timer);
        listeners.delete(check);
        if (error) rejectWait(error);
        else resolveWait();
      };
      listeners.add(check);
      check();
    });

  const kill = async () => {
    if (!closed && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  };

  try {
    await waitFor('LOCKED', 'locked');
  } catch (error) {
    await kill();
    throw error;
  }
  return {
    pid: child.pid,
    async release() {
      child.stdin.write('RELEASE\n');
      await waitFor('RELEASED', 'released');
      const end = await exited;
      if (end.code !== 0) throw new Error(`lock holder ended with ${JSON.stringify(end)}`);
    },
    kill,
  };
}

/**
 * The reference warnings of `sessionId`'s messages dropped past the cap, once `count` of them
 * are in the server's output. An answer can reach the test before the log line that the server
 * wrote ahead of it (two pipes), so this waits for the lines; a metric pins the exact count.
 */
export async function dropWarnings(
  target: ServerProcess,
  sessionId: string,
  cap: number,
  count: number,
): Promise<string[]> {
  const warning = `pending queue full for ${sessionId} (cap=${cap}): dropping oldest message to make room (on-disk spool unavailable)`;
  return eventually(() => {
    const lines = target
      .output()
      .split('\n')
      .filter((line) => line.includes(warning));
    if (lines.length !== count) {
      throw new Error(`${lines.length} drop warning(s) of ${sessionId}, expected ${count}`);
    }
    return lines;
  });
}
