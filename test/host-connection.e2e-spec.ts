import { EventEmitterModule } from '@nestjs/event-emitter';
import { Test } from '@nestjs/testing';
import { TypeOrmModule, getDataSourceToken } from '@nestjs/typeorm';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type DataSource } from 'typeorm';
import { ScribeConfigModule } from '../src/config/scribe-config.module.js';
import { DatabaseReadiness } from '../src/database/database-readiness.js';
import { DatabaseModule } from '../src/database/database.module.js';
import { SCRIBE_CONNECTION } from '../src/database/database.tokens.js';
import { SessionEntity } from '../src/database/entities/session.entity.js';

// A host app with its own default TypeORM connection imports Scribe's DatabaseModule: the two
// connections must not collide (Scribe's is named SCRIBE_CONNECTION).
describe('Scribe beside a host app default TypeORM connection', () => {
  it('compiles, and both connections answer', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'scribe-host-'));
    const moduleRef = await Test.createTestingModule({
      imports: [
        ScribeConfigModule.forRoot({ dataDir, database: { retryIntervalMs: 0 } }),
        EventEmitterModule.forRoot(),
        TypeOrmModule.forRoot({ type: 'sqlite', database: ':memory:' }),
        DatabaseModule,
      ],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: ['fatal'] });
    try {
      await app.init();
      const host = app.get<DataSource>(getDataSourceToken());
      const scribe = app.get<DataSource>(getDataSourceToken(SCRIBE_CONNECTION));
      await app.get(DatabaseReadiness).ready;
      expect(scribe).not.toBe(host);
      expect(host.hasMetadata(SessionEntity)).toBe(false);
      expect(scribe.hasMetadata(SessionEntity)).toBe(true);
      expect(await host.query('SELECT 1 AS one')).toEqual([{ one: 1 }]);
      expect(await scribe.query('SELECT COUNT(*) AS n FROM sessions')).toEqual([{ n: 0 }]);
    } finally {
      await app.close();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
