import { type INestApplication, type ModuleMetadata, type Provider } from '@nestjs/common';
import { Test, type TestingModule, type TestingModuleBuilder } from '@nestjs/testing';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ScribeConfig } from '../config/scribe-config.js';
import { type ScribeGraphQLMode, type ScribeOptions } from '../config/scribe-options.js';
import { ScribeModule } from '../scribe.module.js';
import { TranscriptService } from '../transcript/transcript.service.js';
import { noFaults, proxyFaults, sqliteFaults, type DatabaseFaults } from './database-faults.js';
import { startTcpProxy, type TcpProxy } from './tcp-proxy.js';

export interface ScribeTestingOptions {
  /** The host's own modules, beside Scribe's (in 'host' mode, its GraphQLModule too). */
  imports?: ModuleMetadata['imports'];
  providers?: Provider[];
  /** Scribe's options; `dataDir` defaults to a temporary directory removed on close(). */
  options?: ScribeOptions;
  /** Who serves Scribe's GraphQL API: Scribe's own endpoint (default) or the host's. */
  graphql?: { mode?: ScribeGraphQLMode };
  /**
   * PostgreSQL only: whether the kit puts a TCP proxy of its own between Scribe and the
   * server, so that `faults` can cut it (default true). SQLite needs none.
   */
  faults?: boolean;
  /**
   * Whether the app listens on a loopback port (default true). Without, `url` is empty and
   * `gql` refuses: the test listens itself, or drives `app.getHttpServer()` (supertest).
   */
  listen?: boolean;
  /** Anything else the test overrides before the module compiles (overrideProvider …). */
  override?: (builder: TestingModuleBuilder) => TestingModuleBuilder;
}

/** A GraphQL error as the wire carries it. */
export interface GqlError {
  message: string;
  path?: (string | number)[];
  extensions?: { code?: string; [key: string]: unknown };
}

// A test reads an answer field by field, as its query selected them: `data` is untyped unless
// the test names its shape (gql<{ hello: string }>(...)).
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Untyped = any;

export interface GqlAnswer<T = Untyped> {
  status: number;
  data?: T;
  errors?: GqlError[];
  /** The whole JSON body (or `{ text }` when it was not JSON). */
  body: { data?: T; errors?: GqlError[]; [key: string]: unknown };
}

/** A host app with Scribe in it, listening on a loopback port, for the host's e2e tests. */
export interface ScribeTesting {
  app: INestApplication;
  moduleRef: TestingModule;
  /** The base URL the app listens on (http://127.0.0.1:<port>); empty with `listen: false`. */
  url: string;
  /** Scribe's data directory (temporary unless the options gave one). */
  dataDir: string;
  /** A GraphQL request to `path` (Scribe's GraphQL path by default). */
  gql<T = Untyped>(
    query: string,
    variables?: Record<string, unknown>,
    headers?: Record<string, string>,
    path?: string,
  ): Promise<GqlAnswer<T>>;
  faults: DatabaseFaults;
  /**
   * Resolves once Scribe holds nothing back from the database: every QUEUED or BUFFERED
   * message written back and the database writable (after `faults.databaseUp()`).
   */
  settled(timeoutMs?: number): Promise<void>;
  /** Closes the app, the proxy, and removes the temporary data directory. */
  close(): Promise<void>;
}

// The kit's retry of the database after an outage: quick, so a test's databaseUp() is soon
// followed by the write-back (production's default is slower).
const KIT_RETRY_INTERVAL_MS = 100;

/**
 * A Nest testing module with Scribe (ScribeModule.forRoot) and the host's own modules, built,
 * initialised and listening on 127.0.0.1 (so the anonymous rule of a local start applies
 * while no token or key is configured).
 */
export async function createScribeTestingModule(
  testing: ScribeTestingOptions = {},
): Promise<ScribeTesting> {
  const given = testing.options ?? {};
  const dataDir = given.dataDir ?? (await mkdtemp(join(tmpdir(), 'scribe-kit-')));
  const ownDirectory = given.dataDir === undefined;
  let proxy: TcpProxy | undefined;
  let url = given.database?.url;
  if (url !== undefined && testing.faults !== false) {
    const target = new URL(url);
    proxy = await startTcpProxy(Number(target.port || 5432), target.hostname);
    const proxied = new URL(url);
    proxied.hostname = '127.0.0.1';
    proxied.port = String(proxy.port);
    url = proxied.toString();
  }
  const options: ScribeOptions = {
    ...given,
    dataDir,
    database: { retryIntervalMs: KIT_RETRY_INTERVAL_MS, ...given.database, url },
  };
  const cleanUp = async () => {
    await proxy?.close();
    if (ownDirectory) await rm(dataDir, { recursive: true, force: true });
  };
  let app: INestApplication | undefined;
  try {
    let builder = Test.createTestingModule({
      imports: [
        ScribeModule.forRoot({ ...options, graphql: { ...options.graphql, ...testing.graphql } }),
        ...(testing.imports ?? []),
      ],
      providers: testing.providers ?? [],
    });
    if (testing.override) builder = testing.override(builder);
    const moduleRef = await builder.compile();
    app = moduleRef.createNestApplication({ logger: ['fatal'] });
    let base = '';
    if (testing.listen === false) await app.init();
    else {
      await app.listen(0, '127.0.0.1');
      base = (await app.getUrl()).replace('[::1]', '127.0.0.1');
    }
    const config = app.get(ScribeConfig);
    const database = config.database;
    const faults = proxy
      ? proxyFaults(proxy)
      : database.kind === 'sqlite'
        ? sqliteFaults(database.path)
        : noFaults('PostgreSQL was given with faults: false');
    const transcripts = app.get(TranscriptService);
    const running = app;
    return {
      app: running,
      moduleRef,
      url: base,
      dataDir,
      faults,
      async gql<T>(
        query: string,
        variables?: Record<string, unknown>,
        headers: Record<string, string> = {},
        path = config.graphqlPath,
      ): Promise<GqlAnswer<T>> {
        if (!base) throw new Error('the kit app was created with listen: false');
        const response = await fetch(`${base}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
          body: JSON.stringify({ query, variables }),
        });
        const text = await response.text();
        let body: GqlAnswer<T>['body'];
        try {
          body = JSON.parse(text) as GqlAnswer<T>['body'];
        } catch {
          body = { text };
        }
        return { status: response.status, data: body.data, errors: body.errors, body };
      },
      async settled(timeoutMs = 10_000) {
        const deadline = Date.now() + timeoutMs;
        for (;;) {
          const status = transcripts.pendingStatus();
          if (status.databaseWritable && status.sessions.length === 0) return;
          if (Date.now() >= deadline) {
            throw new Error(
              `Scribe still holds messages back after ${timeoutMs} ms: ${JSON.stringify(status)}`,
            );
          }
          await new Promise((resolveDelay) => setTimeout(resolveDelay, 25));
        }
      },
      async close() {
        if (faults.isDown) await faults.databaseUp();
        await running.close();
        await cleanUp();
      },
    };
  } catch (error) {
    await app?.close();
    await cleanUp();
    throw error;
  }
}
