import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

// The client examples of the README and of its guides in docs/ run as they are written,
// against a server started as the README says: every `sh` block that calls curl and every `js`
// block is marked `<!-- snippet: name -->`, and this runs each marked one. The start snippet
// (in the README) sets PORT and TOKEN (the one place to change them); only PORT's value is
// replaced here, by a free port.
const DOCUMENTS = [
  'README.md',
  ...readdirSync(resolve('docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => join('docs', name)),
].map((path) => ({ path, text: readFileSync(resolve(path), 'utf8') }));
const MARKED = /<!-- snippet: ([\w-]+) -->\n```(\w+)\n([\s\S]*?)\n```/g;
const MARKS = DOCUMENTS.flatMap(({ path, text }) =>
  [...text.matchAll(MARKED)].map(([, name, language, code]) => ({ path, name, language, code })),
);
const SNIPPETS = new Map(
  MARKS.map(({ path, name, language, code }) => [name, { path, language, code }]),
);

function snippet(name: string): string {
  const found = SNIPPETS.get(name);
  if (!found) throw new Error(`Neither the README nor docs/ has a snippet marked ${name}`);
  return found.code;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as { port: number };
  await new Promise((done) => server.close(done));
  return port;
}

/** A child's output so far, and a wait for some text in it (bounded, never a bare sleep). */
function watched(child: ChildProcess) {
  let output = '';
  const waiters = new Set<() => void>();
  const hear = (chunk: Buffer) => {
    output += chunk.toString('utf8');
    for (const waiter of waiters) waiter();
  };
  child.stdout?.on('data', hear);
  child.stderr?.on('data', hear);
  return {
    output: () => output,
    until(text: string, ms: number): Promise<boolean> {
      return new Promise((done) => {
        const check = () => {
          if (!output.includes(text)) return;
          finish(true);
        };
        const finish = (found: boolean) => {
          clearTimeout(timer);
          waiters.delete(check);
          child.off('exit', gone);
          done(found);
        };
        const gone = () => finish(output.includes(text));
        const timer = setTimeout(() => finish(false), ms);
        waiters.add(check);
        child.once('exit', gone);
        check();
      });
    },
  };
}

async function run(command: string, args: string[], env: NodeJS.ProcessEnv, cwd: string) {
  const child = spawn(command, args, { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  const out = watched(child);
  const code = await new Promise<number | null>((done) => child.once('exit', done));
  return { code, output: out.output() };
}

describe('the README', () => {
  let workdir: string;
  let server: ChildProcess;
  let env: NodeJS.ProcessEnv;
  let serverOutput: () => string;

  beforeAll(async () => {
    workdir = await mkdtemp(join(tmpdir(), 'scribe-readme-'));
    // The js snippets import graphql-ws, ws and @apollo/client, as an app that installed them.
    await symlink(resolve('node_modules'), join(workdir, 'node_modules'), 'dir');
    // The start snippet is the README's own: the one place a reader sets PORT and TOKEN.
    expect(SNIPPETS.get('start')?.path).toBe('README.md');
    const start = snippet('start');
    const settings = /^export PORT=(\S+) TOKEN=(\S+)$/m.exec(start);
    if (!settings) throw new Error('The start snippet must begin with export PORT=… TOKEN=…');
    env = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      NO_COLOR: '1',
      PORT: String(await freePort()),
      TOKEN: settings[2],
      // Never ./data, which the README's own start would use.
      DATA_DIR: join(workdir, 'data'),
    };
    await mkdir(env.DATA_DIR!);
    // `npm start` builds first; npm test has built, and a build now would rewrite dist/ under
    // the suites running beside this one. start:prod is npm start without its build.
    const script = start
      .replace(/^export PORT=\S+ /m, 'export ')
      .replace(/\bnpm start\b/, 'exec npm run start:prod');
    expect(script).not.toBe(start);
    server = spawn('bash', ['-euo', 'pipefail', '-c', script], {
      env,
      cwd: process.cwd(),
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const out = watched(server);
    serverOutput = out.output;
    if (!(await out.until('GraphQL API ready at', 60_000))) {
      throw new Error(`The server did not start:\n${out.output()}`);
    }
  }, 90_000);

  afterAll(async () => {
    if (server?.pid !== undefined && server.exitCode === null) {
      const exited = new Promise((done) => server.once('exit', done));
      process.kill(-server.pid, 'SIGTERM');
      await exited;
    }
    await rm(workdir, { recursive: true, force: true });
  });

  it('marks every client example, so that none is left out of this test', () => {
    const unmarked = DOCUMENTS.flatMap(({ path, text }) =>
      [...text.matchAll(/(<!-- snippet: [\w-]+ -->\n)?```(sh|js)\n([\s\S]*?)\n```/g)]
        .filter(
          ([, marker, language, code]) => !marker && (language === 'js' || /\bcurl\b/.test(code)),
        )
        .map(([block]) => `${path}: ${block.slice(0, 80)}`),
    );
    expect(unmarked).toEqual([]);
    // One name, one snippet: a second mark of a name would be silently left out.
    expect(MARKS.map(({ name }) => name)).toEqual([...SNIPPETS.keys()]);
    expect([...SNIPPETS.keys()]).toEqual(
      expect.arrayContaining([
        'start',
        'append',
        'read',
        'subscribe',
        'apollo-client',
        'export',
        'import',
        'edit',
      ]),
    );
    // Each reads the port and the token from the variables the start snippet sets.
    for (const [name, { code }] of SNIPPETS) {
      if (name === 'start') continue;
      expect(code).toMatch(/\$PORT|process\.env\.PORT/);
      expect(code).toMatch(/Bearer \$TOKEN|Bearer \$\{process\.env\.TOKEN\}/);
    }
  });

  it('serves where the start snippet said, with its token', () => {
    expect(serverOutput()).toContain(`http://127.0.0.1:${env.PORT}/graphql`);
  });

  it('appends with curl, and reads it back', async () => {
    const appended = await run('bash', ['-euo', 'pipefail', '-c', snippet('append')], env, workdir);
    expect(appended.code).toBe(0);
    expect(JSON.parse(appended.output)).toMatchObject({
      data: { appendMessage: { status: 'PERSISTED' } },
    });
    const read = await run('bash', ['-euo', 'pipefail', '-c', snippet('read')], env, workdir);
    expect(read.code).toBe(0);
    const answer = JSON.parse(read.output) as {
      errors?: unknown;
      data: { session: { messages: { edges: { node: { content: string } }[] } } };
    };
    expect(answer.errors).toBeUndefined();
    expect(answer.data.session.messages.edges.map((edge) => edge.node.content)).toContain('Hello');
  });

  it('exports the transcript with curl, into the file the server names', async () => {
    const exported = await run('bash', ['-euo', 'pipefail', '-c', snippet('export')], env, workdir);
    expect(exported).toMatchObject({ code: 0 });
    const markdown = readFileSync(join(workdir, 'demo.md'), 'utf8');
    expect(markdown).toMatch(/^# demo/m);
    expect(markdown).toContain('Hello');
  });

  it('edits the appended message with curl: its revision moves on, its content is the new one', async () => {
    const read = await fetch(`http://127.0.0.1:${env.PORT}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${env.TOKEN}` },
      body: JSON.stringify({
        query: '{ session(id: "demo") { messages(first: 1) { edges { node { id } } } } }',
      }),
    });
    const { data } = (await read.json()) as {
      data: { session: { messages: { edges: { node: { id: string } }[] } } };
    };
    const id = data.session.messages.edges[0].node.id;
    const edited = await run(
      'bash',
      ['-euo', 'pipefail', '-c', snippet('edit')],
      { ...env, MESSAGE_ID: id },
      workdir,
    );
    expect(edited.code).toBe(0);
    expect(JSON.parse(edited.output)).toMatchObject({
      data: { editMessage: { id, revision: 2, content: 'Hello, corrected' } },
    });
  });

  it('imports the JSONL export back with curl: every message counted as existing', async () => {
    const exported = await fetch(`http://127.0.0.1:${env.PORT}/sessions/demo/export`, {
      headers: { authorization: `Bearer ${env.TOKEN}` },
    });
    const file = await exported.text();
    await writeFile(join(workdir, 'demo.jsonl'), file);
    const messages = file.split('\n').filter((line) => line.startsWith('{"message"')).length;
    expect(messages).toBeGreaterThan(0);
    const imported = await run('bash', ['-euo', 'pipefail', '-c', snippet('import')], env, workdir);
    expect(imported.code).toBe(0);
    expect(JSON.parse(imported.output)).toMatchObject({
      sessionId: 'demo',
      messages,
      accepted: 0,
      existing: messages,
      status: 'PERSISTED',
      sessionRestored: true,
    });
  });

  it('subscribes with graphql-ws, from Node, and hears a message appended', async () => {
    const file = join(workdir, 'subscribe.mjs');
    await writeFile(file, snippet('subscribe'));
    const child = spawn(process.execPath, [file], {
      env,
      cwd: workdir,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const out = watched(child);
    try {
      // Live only (no cursor): appended until one is heard, since the subscription is made in
      // the background; each append is waited for, bounded.
      let heard = false;
      for (let attempt = 0; attempt < 20 && !heard; attempt++) {
        const content = `live ${attempt}`;
        const answer = await fetch(`http://127.0.0.1:${env.PORT}/graphql`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${env.TOKEN}` },
          body: JSON.stringify({
            query: `mutation($input: AppendMessageInput!) { appendMessage(input: $input) { status } }`,
            variables: { input: { sessionId: 'demo', role: 'ASSISTANT', content } },
          }),
        });
        expect(answer.status).toBe(200);
        heard = await out.until(`ASSISTANT: ${content}`, 500);
      }
      expect(heard).toBe(true);
      expect(out.output()).not.toMatch(/failed|Error/);
    } finally {
      child.kill('SIGTERM');
    }
  });

  it('appends and reads with Apollo Client, from Node', async () => {
    const file = join(workdir, 'apollo-client.mjs');
    await writeFile(file, snippet('apollo-client'));
    const { code, output } = await run(process.execPath, [file], env, workdir);
    expect({ code, output }).toMatchObject({ code: 0 });
    expect(output.split('\n')).toEqual(
      expect.arrayContaining(['PERSISTED', 'USER: Hello, corrected', 'USER: Hi from Apollo']),
    );
  });
});
