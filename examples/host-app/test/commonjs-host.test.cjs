'use strict';
// A CommonJS host: no TypeScript, no decorators, only require(). Node 20.19+ loads Scribe's ES
// modules through require (they have no top-level await), so a CommonJS Nest app can import
// ScribeModule, build itself with ScribeModule.forRoot and inject TranscriptService.
require('reflect-metadata');
const assert = require('node:assert/strict');
const { mkdtempSync, rmSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const { test } = require('node:test');
const { Module } = require('@nestjs/common');
const { NestFactory } = require('@nestjs/core');
const { MessageRole, ScribeModule, TranscriptService } = require('@scribe/server');

test('a CommonJS Nest app with ScribeModule.forRoot appends through TranscriptService', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'scribe-cjs-host-'));
  // @Module(...) as a plain call: what the decorator does to the class.
  class CommonJsHostModule {}
  Module({ imports: [ScribeModule.forRoot({ dataDir })] })(CommonJsHostModule);
  const app = await NestFactory.create(CommonJsHostModule, { logger: ['fatal'] });
  try {
    await app.init();
    const transcripts = app.get(TranscriptService);
    const answer = await transcripts.append('commonjs-host', [
      { role: MessageRole.USER, content: 'from require()' },
    ]);
    assert.equal(answer.status, 'PERSISTED');
    assert.equal(answer.messages[0].content, 'from require()');
  } finally {
    await app.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
});
