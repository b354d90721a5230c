import { type INestApplication } from '@nestjs/common';
import request from 'supertest';
import { createScribeTestingModule, type ScribeTesting } from '../../src/kit/index.js';
import { ScribeConfig } from '../../src/config/scribe-config.js';
import { scribeOptionsFromEnvironment } from '../../src/config/scribe-options-from-environment.js';
import { createPostgresSchema, type DatabaseKind } from './databases.js';

export interface GqlResponse<T = any> {
  status: number;
  data?: T;
  errors?: {
    message: string;
    extensions?: { code?: string; field?: string; [key: string]: unknown };
  }[];
  body: any;
}

export interface TestApp {
  app: INestApplication;
  dataDir: string;
  config: ScribeConfig;
  gql<T = any>(
    query: string,
    variables?: Record<string, unknown>,
    headers?: Record<string, string>,
  ): Promise<GqlResponse<T>>;
  http(): ReturnType<typeof request>;
  close(): Promise<void>;
}

/**
 * Scribe through the public testing kit (createScribeTestingModule), so that every e2e suite
 * that uses this tests the kit too: ScribeModule.forRoot on a temporary data directory (never
 * ./data), with SQLite or a schema of its own on the test PostgreSQL, configured as `npm start`
 * is, from variables through the environment adapter.
 */
export async function createTestApp(
  database: DatabaseKind = 'sqlite',
  variables: Record<string, string> = {},
): Promise<TestApp> {
  const postgres = database === 'postgres' ? await createPostgresSchema() : undefined;
  const options = scribeOptionsFromEnvironment({
    // Replaced by the kit's own temporary directory (scribeOptionsFromEnvironment needs one).
    DATA_DIR: '.',
    DB_RETRY_INTERVAL_MS: '0',
    ...(postgres ? { DATABASE_URL: postgres.url } : {}),
    ...variables,
  });
  let testing: ScribeTesting;
  try {
    testing = await createScribeTestingModule({
      options: { ...options, dataDir: variables.DATA_DIR },
      // The suites that cut PostgreSQL put a proxy of their own in front of it.
      faults: false,
      // Suites listen themselves when they need a port (WebSockets); supertest otherwise.
      listen: false,
    });
  } catch (error) {
    await postgres?.drop();
    throw error;
  }
  const { app } = testing;
  const config = app.get(ScribeConfig);
  const server = app.getHttpServer();
  return {
    app,
    dataDir: testing.dataDir,
    config,
    http: () => request(server),
    async gql(query, variablesIn, headers = {}) {
      const response = await request(server)
        .post(config.graphqlPath)
        .set({ 'content-type': 'application/json', ...headers })
        .send({ query, variables: variablesIn });
      const body = response.body ?? {};
      return { status: response.status, data: body.data, errors: body.errors, body };
    },
    async close() {
      await testing.close();
      await postgres?.drop();
    },
  };
}
