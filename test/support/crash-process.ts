import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { type SentMessage } from './crash-checker.js';
import { type Cleanups } from './fault-helpers.js';
import { startServer, type ProcessEnd, type ServerProcess } from './server-process.js';

type RunAs = { uid: number; gid: number };

const MAIN = resolve('dist/main.js');
export const READY_LINE = /GraphQL API ready at http:\/\/\S+\/graphql/;
// A busy shared machine may need all of it.
export const READY_TIMEOUT_MS = 30_000;

/**
 * How a child process ended, once it has and its output is read to the end: at 'close', not
 * 'exit', when the last lines (a crash's stack) may still be in its pipes.
 */
export function processEnd(child: ChildProcess): Promise<ProcessEnd> {
  const piped = [child.stdout, child.stderr].filter((stream) => stream !== null);
  const exited = child.exitCode !== null || child.signalCode !== null;
  if (exited && piped.every((stream) => stream.readableEnded || stream.destroyed)) {
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  }
  return new Promise((resolveEnd) =>
    child.once('close', (code: number | null, signal: NodeJS.Signals | null) =>
      resolveEnd({ code, signal }),
    ),
  );
}

/** Resolves with `promise`, or rejects with `what` after `timeoutMs`. */
export async function within<T>(promise: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, rejectTimeout) => {
    timer = setTimeout(() => rejectTimeout(new Error(`${what} within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export interface BootingServer {
  child: ChildProcess;
  output(): string;
  ended: Promise<ProcessEnd>;
}

/**
 * Spawns the built server like startServer() does, without waiting for it to be ready: for
 * the restarts that are killed during their boot replay, before they could ever say ready.
 */
export function spawnServer(env: Record<string, string>, runAs?: RunAs): BootingServer {
  const child = spawn(process.execPath, [MAIN], {
    ...(runAs ? { uid: runAs.uid, gid: runAs.gid } : {}),
    env: { PATH: process.env.PATH ?? '', PORT: '0', LOG_LEVEL: 'log', NO_COLOR: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const onData = (chunk: Buffer) => {
    output += chunk.toString('utf8');
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  // 'close' comes once the output has been read to the end, after the exit.
  const ended = new Promise<ProcessEnd>((resolveEnd) =>
    child.once('close', (code, signal) => resolveEnd({ code, signal })),
  );
  return { child, output: () => output, ended };
}

/** SIGKILL from the test; `sent` says whether the test sent it (rather than a failpoint). */
export function externalKiller(target: ServerProcess): { kill(): void; readonly sent: boolean } {
  let sent = false;
  return {
    kill() {
      if (hasEnded(target) || sent) return;
      sent = target.child.kill('SIGKILL');
    },
    get sent() {
      return sent;
    },
  };
}

export function hasEnded(target: { child: ServerProcess['child'] }): boolean {
  return target.child.exitCode !== null || target.child.signalCode !== null;
}

/** A copy of what was sent, with the answers as they are now. */
export function snapshot(sent: readonly SentMessage[]): SentMessage[] {
  return sent.map((message) => ({
    sessionId: message.sessionId,
    clientMessageId: message.clientMessageId,
    content: message.content,
    sends: [...message.sends],
    answer: message.answer && { ...message.answer },
  }));
}

/** A crash run's server, ready; killed at clean-up, its output shown on failure. */
export async function server(
  cleanups: Cleanups,
  label: string,
  env: Record<string, string>,
  runAs?: RunAs,
): Promise<ServerProcess> {
  const started = await startServer(env, { readyTimeoutMs: READY_TIMEOUT_MS, runAs });
  cleanups.showOnFailure(`${label} (pid ${started.child.pid})`, () => started.output());
  cleanups.add(() => started.stop('SIGKILL'));
  return started;
}

/** A crash run's server that may never be ready (killed during boot replay). */
export function bootingServer(
  cleanups: Cleanups,
  label: string,
  env: Record<string, string>,
  runAs?: RunAs,
) {
  const booting = spawnServer(env, runAs);
  cleanups.showOnFailure(`${label} (pid ${booting.child.pid})`, () => booting.output());
  cleanups.add(async () => {
    if (!hasEnded(booting)) booting.child.kill('SIGKILL');
    await booting.ended;
  });
  return booting;
}
