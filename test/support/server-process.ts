import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import request from 'supertest';
import { type GqlResponse } from './test-app.js';

const MAIN = resolve('dist/main.js');
const READY = /GraphQL API ready at (http:\/\/\S+)\/graphql/;

/** Nest re-raises the signal after its shutdown hooks, so a clean stop ends by that signal. */
export interface ProcessEnd {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface ServerProcess {
  url: string;
  child: ChildProcess;
  /** Everything the process printed so far, stdout and stderr interleaved. */
  output(): string;
  /**
   * Resolves when the output contains `pattern` (a string: that text, as it is), rejects after
   * `timeoutMs`. For a line the process prints while it answers: its output comes through a
   * pipe of its own, which an answer can overtake.
   */
  waitForOutput(pattern: RegExp | string, timeoutMs?: number): Promise<RegExpExecArray>;
  gql<T = any>(
    query: string,
    variables?: Record<string, unknown>,
    headers?: Record<string, string>,
  ): Promise<GqlResponse<T>>;
  get(path: string): Promise<request.Response>;
  /** Sends `signal` and resolves with how the process ended once it is gone, its output read. */
  stop(signal?: NodeJS.Signals): Promise<ProcessEnd>;
}

/** A temporary data directory, removed by the returned function. */
export async function temporaryDataDir(): Promise<{ path: string; remove: () => Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), 'scribe-proc-'));
  return { path, remove: () => rm(path, { recursive: true, force: true }) };
}

export interface StartOptions {
  readyTimeoutMs?: number;
  /**
   * Runs the server as this user and group (the test runs as root, whom a file's mode does not
   * stop): its data and spool directories must belong to them.
   */
  runAs?: { uid: number; gid: number };
}

/** `text` as a regular expression that matches it, and only it, character for character. */
export function literally(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * Starts the built server (`npm test` builds it first) as a real process on a free port and
 * resolves once it says it is ready. Logs are plain (no colours) so tests can match them.
 */
export async function startServer(
  env: Record<string, string>,
  { readyTimeoutMs = 20_000, runAs }: StartOptions = {},
): Promise<ServerProcess> {
  const child = spawn(process.execPath, [MAIN], {
    // Node drops the supplementary groups too when it changes the user.
    ...(runAs ? { uid: runAs.uid, gid: runAs.gid } : {}),
    env: {
      PATH: process.env.PATH ?? '',
      PORT: '0',
      LOG_LEVEL: 'log',
      NO_COLOR: '1',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const waiters = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    output += chunk.toString('utf8');
    for (const waiter of waiters) waiter();
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  // 'close', not 'exit': at 'exit' the last lines may still be in the pipes. Once the pipes
  // are closed too, output() holds all the process printed.
  let closed = false;
  const exited = new Promise<ProcessEnd>((resolveExit) =>
    child.once('close', (code: number | null, signal: NodeJS.Signals | null) => {
      closed = true;
      for (const waiter of waiters) waiter();
      resolveExit({ code, signal });
    }),
  );

  const waitForOutput = (wanted: RegExp | string, timeoutMs = 10_000) =>
    new Promise<RegExpExecArray>((resolveWait, rejectWait) => {
      const pattern = typeof wanted === 'string' ? new RegExp(literally(wanted)) : wanted;
      const check = () => {
        const match = pattern.exec(output);
        if (match) {
          cleanup();
          resolveWait(match);
        } else if (closed) {
          cleanup();
          rejectWait(
            new Error(
              `server exited (code ${child.exitCode}, signal ${child.signalCode}) before printing ${pattern}:\n${output}`,
            ),
          );
        }
      };
      const timer = setTimeout(() => {
        cleanup();
        rejectWait(new Error(`no ${pattern} within ${timeoutMs} ms:\n${output}`));
      }, timeoutMs);
      const cleanup = () => {
        clearTimeout(timer);
        waiters.delete(check);
      };
      waiters.add(check);
      check();
    });

  let url: string;
  try {
    url = (await waitForOutput(READY, readyTimeoutMs))[1];
  } catch (error) {
    // Not ready in time (or gone): nothing else will stop it, and its pipes would keep Jest.
    child.kill('SIGKILL');
    throw error;
  }
  return {
    url,
    child,
    output: () => output,
    waitForOutput,
    async gql(query, variables, headers = {}) {
      const response = await request(url)
        .post('/graphql')
        .set({ 'content-type': 'application/json', ...headers })
        .send({ query, variables });
      const body = response.body ?? {};
      return { status: response.status, data: body.data, errors: body.errors, body };
    },
    get: (path) => request(url).get(path),
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}
