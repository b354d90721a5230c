// Shared pieces of `npm run bench`: a started Scribe process and a closed-loop load generator.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Starts `node dist/main.js` on a free port with a temporary DATA_DIR; resolves when ready.
 * `nodeArgs` go to node itself (e.g. `--cpu-prof`, which NODE_OPTIONS refuses); `cpu` pins the
 * server to one CPU; `heapProbe` lets `liveHeap()`, `markHeap()` and `heapAllocated()` read
 * its heap; `script` starts another server that prints the same ready line (bench/bare-app.js).
 */
export async function startServer(
  env = {},
  { nodeArgs = [], cpu, heapProbe = false, script = 'dist/main.js' } = {},
) {
  const probe = heapProbe ? ['--expose-gc', '--import', './bench/heap-probe.js'] : [];
  const dataDir = env.DATA_DIR ?? (await mkdtemp(join(tmpdir(), 'scribe-bench-')));
  const child = spawn(process.execPath, [...probe, ...nodeArgs, script], {
    env: {
      ...process.env,
      // As `npm start` runs it (see package.json).
      NODE_ENV: process.env.NODE_ENV ?? 'production',
      PORT: '0',
      DATA_DIR: dataDir,
      LOG_LEVEL: 'log',
      NO_COLOR: '1',
      ...env,
    },
    stdio: heapProbe ? ['ignore', 'pipe', 'pipe', 'ipc'] : ['ignore', 'pipe', 'pipe'],
  });
  if (cpu !== undefined) pinTo(child.pid, cpu);
  let output = '';
  const url = await new Promise((resolve, reject) => {
    const onData = (chunk) => {
      output += chunk;
      const match = /GraphQL API ready at (http:\/\/\S+)\/graphql/.exec(output);
      if (match) resolve(match[1]);
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => reject(new Error(`server exited with ${code}:\n${output}`)));
  });
  const ask = async (question) => {
    const answer = new Promise((resolve) => child.once('message', resolve));
    child.send(question);
    return answer;
  };
  return {
    url,
    pid: child.pid,
    dataDir,
    // These three need a server started with `heapProbe: true` (see bench/heap-probe.js).
    /** The server's live heap in bytes, after two full collections. */
    liveHeap: async () => (await ask('heap')).heapUsed,
    /** Collects garbage and remembers the heap in use, for `heapAllocated()`. */
    markHeap: () => ask('mark'),
    /** `{ heapBytes, externalBytes, collections }` since `markHeap()`. */
    heapAllocated: () => ask('allocated'),
    async stop({ keepData = false } = {}) {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
      if (!keepData) await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** Pins a process and every thread it has, and will have, to one CPU (util-linux taskset). */
export function pinTo(pid, cpu) {
  execFileSync('taskset', ['-a', '-pc', String(cpu), String(pid)], { stdio: 'ignore' });
}

/** The CPUs this process (the load) may run on, as taskset lists them ("0-1", "0,2"). */
function affinityOfLoad() {
  return /list:\s*(\S+)/.exec(
    execFileSync('taskset', ['-pc', String(process.pid)], { encoding: 'utf8' }),
  )[1];
}

/** Pins this process (the load) to `cpu`; returns what gives it back the CPUs it had. */
export function pinLoad(cpu) {
  const affinity = affinityOfLoad();
  pinTo(process.pid, cpu);
  return () => pinTo(process.pid, affinity);
}

/**
 * Runs `work({ serverCpu })` with this process (the load) pinned to one of its CPUs and
 * `serverCpu` another, for the servers the caller starts (`cpu: serverCpu`); then gives this
 * process back its CPUs. With one CPU, nothing is pinned (`serverCpu` undefined).
 */
export async function withPinnedLoad(work) {
  const affinity = affinityOfLoad();
  const cpus = affinity.split(',').flatMap((range) => {
    const [first, last = first] = range.split('-').map(Number);
    return Array.from({ length: last - first + 1 }, (_, i) => first + i);
  });
  if (cpus.length < 2) return work({ serverCpu: undefined });
  pinTo(process.pid, cpus[1]);
  try {
    return await work({ serverCpu: cpus[0] });
  } finally {
    pinTo(process.pid, affinity);
  }
}

export const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

/** Resident set size of a process in bytes, from /proc. */
export async function rssOf(pid) {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)[1]) * 1024;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });

/** One POST of a GraphQL body; resolves with the parsed JSON answer. */
export function post(baseUrl, body, path = '/graphql') {
  return postBytes(baseUrl, Buffer.from(JSON.stringify(body)), path);
}

/**
 * One POST of an already serialized body (a client that builds its request once), optionally
 * from a given local address: all of 127.0.0.0/8 reaches a server on loopback, as distinct
 * sources.
 */
export function postBytes(
  baseUrl,
  payload,
  path = '/graphql',
  localAddress = undefined,
  headers = {},
) {
  const url = new URL(path, baseUrl);
  return new Promise((resolve, reject) => {
    const request = http.request(
      url,
      {
        method: 'POST',
        agent,
        localAddress,
        headers: {
          'content-type': 'application/json',
          'content-length': payload.length,
          ...headers,
        },
      },
      (response) => {
        const chunks = [];
        response.on('data', (chunk) => chunks.push(chunk));
        response.on('end', () => {
          try {
            resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
          } catch (error) {
            reject(error);
          }
        });
      },
    );
    request.on('error', reject);
    request.end(payload);
  });
}

export function get(baseUrl, path) {
  return new Promise((resolve, reject) => {
    http
      .get(new URL(path, baseUrl), { agent }, (response) => {
        let text = '';
        response.on('data', (chunk) => (text += chunk));
        response.on('end', () => resolve({ status: response.statusCode, text }));
      })
      .on('error', reject);
  });
}

/**
 * Closed loop: `clients` workers each send `makeBody(client, i)` back to back until
 * `durationMs` has passed. Returns throughput and latency percentiles.
 */
export async function load({ url, clients, durationMs, makeBody, check }) {
  const latencies = [];
  let errors = 0;
  const deadline = performance.now() + durationMs;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async (_, client) => {
      for (let i = 0; performance.now() < deadline; i++) {
        const begin = performance.now();
        const answer = await post(url, makeBody(client, i));
        latencies.push(performance.now() - begin);
        if (answer.errors || (check && !check(answer))) errors += 1;
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))];
  return {
    requests: latencies.length,
    errors,
    perSecond: latencies.length / elapsed,
    p50: at(0.5),
    p99: at(0.99),
  };
}

/**
 * `load()` against a started server for `seconds` after `warmUpSeconds` of the same load, with
 * the CPU each request cost: `serverCpu` (the server's ms), and `otherCpu` when `otherCpuMs`
 * reads another process's total (PostgreSQL's, say).
 */
export async function loadWithCpu(server, { warmUpSeconds, seconds, otherCpuMs, ...work }) {
  const run = (durationSeconds) =>
    load({ url: server.url, durationMs: durationSeconds * 1000, ...work });
  await run(warmUpSeconds);
  const readOther = otherCpuMs ?? (async () => 0);
  const [serverBefore, otherBefore] = [await cpuMsOf(server.pid), await readOther()];
  const result = await run(seconds);
  const serverMs = (await cpuMsOf(server.pid)) - serverBefore;
  const otherMs = (await readOther()) - otherBefore;
  return {
    ...result,
    serverCpu: serverMs / result.requests,
    otherCpu: otherMs / result.requests,
  };
}

export function fmt(result) {
  return `${result.perSecond.toFixed(0).padStart(7)} req/s  p50 ${result.p50.toFixed(2)} ms  p99 ${result.p99.toFixed(2)} ms  (${result.requests} requests, ${result.errors} errors)`;
}

/** Holds the SQLite write lock from another process until `release()` (the e2e tests' holder). */
export async function holdSqliteLock(databaseFile) {
  const { spawn: spawnChild } = await import('node:child_process');
  const child = spawnChild(process.execPath, ['test/support/sqlite-lock-holder.js', databaseFile], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  await new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
      if (out.includes('LOCKED')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`lock holder exited with ${code}`)));
  });
  return {
    async release() {
      child.stdin.end('RELEASE\n');
      await new Promise((resolve) => child.once('exit', resolve));
    },
  };
}

/** Samples a process's RSS every 50 ms until stopped; returns the peak in bytes. */
export function sampleRss(pid) {
  let peak = 0;
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      peak = Math.max(peak, await rssOf(pid).catch(() => 0));
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      return peak;
    },
  };
}

export const mib = (bytes) => `${(bytes / 1024 / 1024).toFixed(0)} MiB`;

const APPEND_MANY = `mutation($input: AppendMessagesInput!) { appendMessages(input: $input) { status } }`;

/**
 * Appends `count` messages of about `contentChars` characters to a session, 1,000 to a
 * request, numbered from 0 at the start of their content; fails on any error.
 */
export async function fillSession(url, sessionId, count, contentChars = 400) {
  const content = 'x'.repeat(contentChars);
  for (let start = 0; start < count; start += 1000) {
    const messages = Array.from({ length: Math.min(1000, count - start) }, (_, i) => ({
      role: i % 2 ? 'ASSISTANT' : 'USER',
      content: `${start + i}: ${content}`,
    }));
    const answer = await post(url, {
      query: APPEND_MANY,
      variables: { input: { sessionId, messages } },
    });
    if (answer.errors) throw new Error(JSON.stringify(answer.errors));
  }
}

const TICK_MS = 1000 / Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }));

/** User + system CPU of a process (all its threads) in ms, from /proc/<pid>/stat. */
export async function cpuMsOf(pid) {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
}
