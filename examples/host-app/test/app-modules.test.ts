import 'reflect-metadata';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type INestApplication, type Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { HOST_GRAPHQL_PATH } from '../src/host-graphql.js';

// The example's own root modules, as main.ts serves them: AppModule (ScribeModule.forRoot,
// 'own' mode) and AppHostModeModule (ScribeModule.forRootAsync, 'host' mode). Their dataDir is
// read from DATA_DIR when the modules load, so it is set before they are imported.
const dataDir = await mkdtemp(join(tmpdir(), 'scribe-host-app-'));
process.env.DATA_DIR = dataDir;
const { AppModule } = await import('../src/app.module.js');
const { AppHostModeModule } = await import('../src/app-host-mode.module.js');

after(() => rm(dataDir, { recursive: true, force: true }));

async function post(app: INestApplication, path: string, query: string): Promise<unknown> {
  const base = (await app.getUrl()).replace('[::1]', '127.0.0.1');
  const response = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query }),
  });
  return response.json();
}

const roots: [string, Type, string][] = [
  ['AppModule (forRoot, own)', AppModule, HOST_GRAPHQL_PATH],
  ['AppHostModeModule (forRootAsync, host)', AppHostModeModule, '/graphql'],
];

for (const [name, root, hostPath] of roots) {
  describe(name, () => {
    let app: INestApplication;

    before(async () => {
      app = await NestFactory.create(root, { logger: ['fatal'] });
      // Loopback and no token configured: Scribe's anonymous rule of a local start applies.
      await app.listen(0, '127.0.0.1');
    });

    after(() => app?.close());

    it("serves the host's field and Scribe's", async () => {
      assert.deepEqual(await post(app, hostPath, '{ hello }'), {
        data: { hello: 'Hello from the host' },
      });
      assert.deepEqual(await post(app, '/graphql', '{ session(id: "absent") { id } }'), {
        data: { session: null },
      });
    });
  });
}
