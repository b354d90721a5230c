import { type INestApplication } from '@nestjs/common';
import { type NestExpressApplication } from '@nestjs/platform-express';
import { Test } from '@nestjs/testing';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { AppModule } from '../../src/app.module.js';
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
 * The real AppModule in-process, on a temporary data directory (never ./data), with SQLite or
 * a schema of its own on the test PostgreSQL, configured as `npm start` is: from variables,
 * through the environment adapter, into AppModule.forRoot.
 */
export async function createTestApp(
  database: DatabaseKind = 'sqlite',
  variables: Record<string, string> = {},
): Promise<TestApp> {
  const dataDir = await mkdtemp(join(tmpdir(), 'scribe-e2e-'));
  const postgres = database === 'postgres' ? await createPostgresSchema() : undefined;
  const options = scribeOptionsFromEnvironment({
    DATA_DIR: dataDir,
    DB_RETRY_INTERVAL_MS: '0',
    ...(postgres ? { DATABASE_URL: postgres.url } : {}),
    ...variables,
  });
  const moduleRef = await Test.createTestingModule({
    imports: [AppModule.forRoot(options)],
  }).compile();
  const app = moduleRef.createNestApplication<NestExpressApplication>({
    bodyParser: false,
    logger: ['fatal'],
  });
  await app.init();
  const config = app.get(ScribeConfig);
  const server = app.getHttpServer();
  return {
    app,
    dataDir,
    config,
    http: () => request(server),
    async gql(query, variablesIn, headers = {}) {
      const response = await request(server)
        .post('/graphql')
        .set({ 'content-type': 'application/json', ...headers })
        .send({ query, variables: variablesIn });
      const body = response.body ?? {};
      return { status: response.status, data: body.data, errors: body.errors, body };
    },
    async close() {
      await app.close();
      await postgres?.drop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
