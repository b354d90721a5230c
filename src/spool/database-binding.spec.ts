import {
  DatabaseBinding,
  DatabaseCheck,
  SpoolOfAnotherDatabase,
  decideBinding,
  type SpoolDatabase,
} from './database-binding.js';
import { type DatabaseIdStore } from './database-id-file.js';

const DIR = '/spool';
const OURS = 'aaaaaaaaaaaaaaaa';
const THEIRS = 'bbbbbbbbbbbbbbbb';

describe(decideBinding.name, () => {
  it('claims a spool that names no database, with or without segments', () => {
    expect(decideBinding({ id: OURS, created: false }, null, 3)).toEqual({ kind: 'claim' });
    expect(decideBinding({ id: OURS, created: true }, null, 0)).toEqual({ kind: 'claim' });
  });

  it('matches a spool of this database, whatever else holds', () => {
    expect(decideBinding({ id: OURS, created: false }, OURS, 5)).toEqual({ kind: 'match' });
    expect(decideBinding({ id: OURS, created: true }, OURS, 0)).toEqual({ kind: 'match' });
  });

  it('takes over, for a database that got its identity only now, a spool without segments of others', () => {
    expect(decideBinding({ id: OURS, created: true }, THEIRS, 0)).toEqual({ kind: 'take-over' });
  });

  it('refuses a new database pointed at a spool that holds segments of another', () => {
    expect(decideBinding({ id: OURS, created: true }, THEIRS, 2)).toEqual({
      kind: 'refuse',
      reason: `its database.id names database ${THEIRS}, and this instance's database is ${OURS} (a new database, and the spool holds 2 segment(s) of other instances)`,
    });
  });

  it('refuses a spool of another database, even one with no segments', () => {
    const reason = `its database.id names database ${THEIRS}, and this instance's database is ${OURS}`;
    expect(decideBinding({ id: OURS, created: false }, THEIRS, 0)).toEqual({
      kind: 'refuse',
      reason,
    });
    expect(decideBinding({ id: OURS, created: false }, THEIRS, 4)).toEqual({
      kind: 'refuse',
      reason,
    });
  });
});

class FakeIdStore implements DatabaseIdStore {
  id: string | null = null;
  readError: Error | null = null;
  // What another instance writes first, just before this one's claim lands.
  claimedMeanwhile: string | null = null;
  readonly calls: string[] = [];

  async read(): Promise<string | null> {
    this.calls.push('read');
    if (this.readError) throw this.readError;
    return this.id;
  }

  async create(id: string): Promise<string> {
    this.calls.push(`create ${id}`);
    this.id ??= this.claimedMeanwhile ?? id;
    return this.id;
  }

  async replace(id: string): Promise<string> {
    this.calls.push(`replace ${id}`);
    this.id = id;
    return id;
  }
}

class FakeDatabase implements SpoolDatabase {
  answer: { id: string; created: boolean } | Error = { id: OURS, created: false };
  calls = 0;
  // When set, answers wait for it.
  gate: Promise<void> | null = null;

  async identity(): Promise<{ id: string; created: boolean }> {
    this.calls++;
    await this.gate;
    if (this.answer instanceof Error) throw this.answer;
    return this.answer;
  }
}

describe(DatabaseBinding.name, () => {
  let idFile: FakeIdStore;
  let database: FakeDatabase;
  let foreign: number;
  let logs: { level: string; message: string }[];
  let sut: DatabaseBinding;

  beforeEach(() => {
    idFile = new FakeIdStore();
    database = new FakeDatabase();
    foreign = 0;
    logs = [];
    const logger = {
      log: (message: string) => logs.push({ level: 'log', message }),
      warn: (message: string) => logs.push({ level: 'warn', message }),
      error: (message: string) => logs.push({ level: 'error', message }),
    };
    sut = new DatabaseBinding(DIR, idFile, database, async () => foreign, logger);
  });

  const refusal = (reason: string) =>
    `Refusing the spool at ${DIR}: ${reason}. Its journals are not adopted and nothing is journaled there (what the database cannot take is BUFFERED); one SPOOL_DIR serves the instances of one database only`;

  it('is pending before any check, and lets this instance journal meanwhile', () => {
    expect(sut.status).toEqual({
      databaseCheck: DatabaseCheck.PENDING,
      databaseId: null,
      instanceDatabaseId: null,
      databaseCheckReason: 'the database has not answered yet',
    });
    expect(() => sut.assertJournalable()).not.toThrow();
    expect(database.calls).toBe(0);
  });

  it('claims a spool without database.id for its database, and says so once', async () => {
    expect(await sut.verify()).toBe(true);
    expect(idFile.calls).toEqual(['read', `create ${OURS}`]);
    expect(sut.status).toEqual({
      databaseCheck: DatabaseCheck.VERIFIED,
      databaseId: OURS,
      instanceDatabaseId: OURS,
      databaseCheckReason: null,
    });
    expect(await sut.verify()).toBe(true);
    expect(idFile.calls).toEqual(['read', `create ${OURS}`, 'read']);
    expect(logs).toEqual([
      { level: 'log', message: `The spool at ${DIR} claimed for database ${OURS}` },
    ]);
  });

  it('verifies a spool of its database without writing', async () => {
    idFile.id = OURS;
    expect(await sut.verify()).toBe(true);
    expect(idFile.calls).toEqual(['read']);
    expect(logs).toEqual([
      { level: 'log', message: `The spool at ${DIR} belongs to database ${OURS}` },
    ]);
  });

  it('takes over a spool without segments of others for a database new now', async () => {
    idFile.id = THEIRS;
    database.answer = { id: OURS, created: true };
    expect(await sut.verify()).toBe(true);
    expect(idFile.calls).toEqual(['read', `replace ${OURS}`]);
    expect(sut.status.databaseId).toBe(OURS);
    expect(logs).toEqual([
      { level: 'log', message: `The spool at ${DIR} taken over for database ${OURS}` },
    ]);
  });

  it('refuses a spool of another database: no adoption, no journaling, one ERROR line', async () => {
    idFile.id = THEIRS;
    foreign = 3;
    expect(await sut.verify()).toBe(false);
    expect(await sut.verify()).toBe(false);
    const reason = `its database.id names database ${THEIRS}, and this instance's database is ${OURS}`;
    expect(sut.status).toEqual({
      databaseCheck: DatabaseCheck.REFUSED,
      databaseId: THEIRS,
      instanceDatabaseId: OURS,
      databaseCheckReason: reason,
    });
    expect(idFile.calls).toEqual(['read', 'read']);
    expect(logs).toEqual([{ level: 'error', message: refusal(reason) }]);
    expect(() => sut.assertJournalable()).toThrow(SpoolOfAnotherDatabase);
    expect(() => sut.assertJournalable()).toThrow(
      `the spool belongs to another database: ${reason}`,
    );
  });

  it('refuses, rather than claims, for a new database a spool with segments of another', async () => {
    idFile.id = THEIRS;
    database.answer = { id: OURS, created: true };
    foreign = 1;
    expect(await sut.verify()).toBe(false);
    expect(idFile.id).toBe(THEIRS);
    expect(idFile.calls).toEqual(['read']);
    expect(sut.status.databaseCheckReason).toBe(
      `its database.id names database ${THEIRS}, and this instance's database is ${OURS} (a new database, and the spool holds 1 segment(s) of other instances)`,
    );
  });

  it('refuses when an instance of another database claimed the spool first', async () => {
    idFile.claimedMeanwhile = THEIRS;
    expect(await sut.verify()).toBe(false);
    expect(sut.status).toEqual({
      databaseCheck: DatabaseCheck.REFUSED,
      databaseId: THEIRS,
      instanceDatabaseId: OURS,
      databaseCheckReason: `its database.id names database ${THEIRS}, and this instance's database is ${OURS}`,
    });
    expect(logs.map((line) => line.level)).toEqual(['error']);
  });

  it('stays pending while the database does not answer, warning once per reason', async () => {
    database.answer = new Error('connect ECONNREFUSED');
    expect(await sut.verify()).toBe(false);
    expect(await sut.verify()).toBe(false);
    expect(idFile.calls).toEqual([]);
    const reason = 'the database has not answered yet: connect ECONNREFUSED';
    expect(sut.status).toEqual({
      databaseCheck: DatabaseCheck.PENDING,
      databaseId: null,
      instanceDatabaseId: null,
      databaseCheckReason: reason,
    });
    expect(logs).toEqual([
      {
        level: 'warn',
        message: `The spool at ${DIR} is not verified as this database's yet (${reason}); journals of other instances wait until it is`,
      },
    ]);
    expect(() => sut.assertJournalable()).not.toThrow();

    database.answer = { id: OURS, created: false };
    expect(await sut.verify()).toBe(true);
    expect(sut.status.databaseCheck).toBe(DatabaseCheck.VERIFIED);
  });

  it('keeps its verdict while the database is away', async () => {
    expect(await sut.verify()).toBe(true);
    database.answer = new Error('gone');
    expect(await sut.verify()).toBe(true);
    expect(sut.status.databaseCheck).toBe(DatabaseCheck.VERIFIED);

    idFile.id = THEIRS;
    database.answer = { id: OURS, created: false };
    expect(await sut.verify()).toBe(false);
    database.answer = new Error('gone');
    expect(await sut.verify()).toBe(false);
    expect(sut.status.databaseCheck).toBe(DatabaseCheck.REFUSED);
    expect(logs.map((line) => line.level)).toEqual(['log', 'error']);
  });

  it('is pending, not refused, when database.id cannot be read', async () => {
    idFile.readError = Object.assign(new Error('permission denied'), { code: 'EACCES' });
    expect(await sut.verify()).toBe(false);
    expect(sut.status).toEqual({
      databaseCheck: DatabaseCheck.PENDING,
      databaseId: null,
      instanceDatabaseId: OURS,
      databaseCheckReason: 'database.id cannot be used: EACCES: permission denied',
    });
    expect(() => sut.assertJournalable()).not.toThrow();
    expect(logs.map((line) => line.level)).toEqual(['warn']);
  });

  it('accepts the spool again once it is fixed, and says so', async () => {
    idFile.id = THEIRS;
    expect(await sut.verify()).toBe(false);
    idFile.id = null;
    expect(await sut.verify()).toBe(true);
    expect(() => sut.assertJournalable()).not.toThrow();
    expect(logs.map((line) => line.message)).toEqual([
      refusal(`its database.id names database ${THEIRS}, and this instance's database is ${OURS}`),
      `The spool at ${DIR} claimed for database ${OURS}`,
    ]);
  });

  it('runs one check at a time: callers during one share its answer', async () => {
    let open: () => void = () => undefined;
    database.gate = new Promise((resolve) => (open = resolve));
    const first = sut.verify();
    const second = sut.verify();
    expect(second).toBe(first);
    open();
    expect(await first).toBe(true);
    expect(database.calls).toBe(1);
    await sut.verify();
    expect(database.calls).toBe(2);
  });
});
