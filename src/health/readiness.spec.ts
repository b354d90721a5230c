import { deferred } from '../common/testing/deferred.js';
import { ReadinessCheck, type ReadinessSources } from './readiness.js';

class FakeSources implements ReadinessSources {
  accepts = true;
  database = true;
  journal = true;
  checks = 0;
  nextCheck: Promise<boolean> = Promise.resolve(false);

  accepting = () => this.accepts;
  databaseWritable = () => this.database;
  journalWritable = () => this.journal;
  checkJournal = () => {
    this.checks += 1;
    return this.nextCheck;
  };
}

describe(ReadinessCheck.name, () => {
  let sources: FakeSources;
  let clock: number;
  let sut: ReadinessCheck;

  beforeEach(() => {
    sources = new FakeSources();
    clock = 1_000_000;
    sut = new ReadinessCheck(sources, 5000, () => clock);
  });

  it('is ready while the database takes writes, the journal down or not, without a check', async () => {
    sources.journal = false;
    expect(await sut.check()).toEqual({ status: 'ready', database: 'up', journal: 'down' });
    expect(sources.checks).toBe(0);
  });

  it('is ready through the journal while the database is down, without a check', async () => {
    sources.database = false;
    expect(await sut.check()).toEqual({ status: 'ready', database: 'down', journal: 'up' });
    expect(sources.checks).toBe(0);
  });

  it('is unavailable while neither takes a write, and tries the journal once per interval', async () => {
    sources.database = false;
    sources.journal = false;
    expect((await sut.check()).status).toBe('unavailable');
    expect((await sut.check()).status).toBe('unavailable');
    expect(sources.checks).toBe(1);
    clock += 5000;
    sources.nextCheck = Promise.resolve(true);
    expect(await sut.check()).toEqual({ status: 'ready', database: 'down', journal: 'up' });
    expect(sources.checks).toBe(2);
  });

  it('shares one running check among concurrent probes, and counts a failed one as down', async () => {
    sources.database = false;
    sources.journal = false;
    const check = deferred<boolean>();
    sources.nextCheck = check.promise;
    const probes = [sut.check(), sut.check()];
    check.reject(new Error('EACCES'));
    expect((await Promise.all(probes)).map((probe) => probe.status)).toEqual([
      'unavailable',
      'unavailable',
    ]);
    expect(sources.checks).toBe(1);
  });

  it('is shutting down once appends are refused, whatever the stores say', async () => {
    sources.accepts = false;
    expect((await sut.check()).status).toBe('shutting_down');
    sources.database = false;
    sources.journal = false;
    expect((await sut.check()).status).toBe('shutting_down');
    expect(sources.checks).toBe(0);
  });
});
