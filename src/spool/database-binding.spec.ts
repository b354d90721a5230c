import { DatabaseBinding } from './database-binding.js';
import {
  DatabaseCheck,
  PROVISIONAL_ID,
  SpoolOfAnotherDatabase,
  decideBinding,
  type DatabaseIdentity,
  type SpoolDatabase,
} from './database-binding-rules.js';
import { type DatabaseIdStore, type SpoolDatabaseRecord } from './database-id-file.js';

const DIR = '/spool';
const OURS = 'aaaaaaaaaaaaaaaa';
const THEIRS = 'bbbbbbbbbbbbbbbb';

const HERE = 'sqlite:/data/scribe.sqlite';
const ELSEWHERE = 'sqlite:/other/scribe.sqlite';
const ours = (created: boolean) => ({ id: OURS, created, location: HERE });
const spoolOf = (id: string, location: string | null = ELSEWHERE) => ({ id, location });

describe(decideBinding.name, () => {
  it('claims a spool that names no database, with or without segments', () => {
    expect(decideBinding(ours(false), null, 3)).toEqual({ kind: 'claim' });
    expect(decideBinding(ours(true), null, 0)).toEqual({ kind: 'claim' });
  });

  it('matches a spool of this database, whatever else holds', () => {
    expect(decideBinding(ours(false), spoolOf(OURS), 5)).toEqual({ kind: 'match' });
    expect(decideBinding(ours(true), spoolOf(OURS), 0)).toEqual({ kind: 'match' });
  });

  it('refuses, for a database that got its identity only now elsewhere, even a spool without segments of others', () => {
    // Two instances of two new databases on one empty spool: the one that claimed it first keeps it.
    const reason = `its database.id names database ${THEIRS}, and this instance's database is ${OURS} (a new database, not where the spool's database was; the spool holds 0 segment(s) of other instances)`;
    expect(decideBinding(ours(true), spoolOf(THEIRS), 0)).toEqual({ kind: 'refuse', reason });
  });

  it('takes over, for a database new now where the spool says its database was, a spool with segments', () => {
    expect(decideBinding(ours(true), spoolOf(THEIRS, HERE), 3)).toEqual({ kind: 'take-over' });
  });

  it('refuses a new database elsewhere pointed at a spool that holds segments of another', () => {
    const reason = `its database.id names database ${THEIRS}, and this instance's database is ${OURS} (a new database, not where the spool's database was; the spool holds 2 segment(s) of other instances)`;
    expect(decideBinding(ours(true), spoolOf(THEIRS), 2)).toEqual({ kind: 'refuse', reason });
    expect(decideBinding(ours(true), spoolOf(THEIRS, null), 2)).toEqual({
      kind: 'refuse',
      reason,
    });
  });

  it('refuses a spool of another database, even one with no segments or at the same place', () => {
    const reason = `its database.id names database ${THEIRS}, and this instance's database is ${OURS}`;
    expect(decideBinding(ours(false), spoolOf(THEIRS), 0)).toEqual({ kind: 'refuse', reason });
    expect(decideBinding(ours(false), spoolOf(THEIRS), 4)).toEqual({ kind: 'refuse', reason });
    expect(decideBinding(ours(false), spoolOf(THEIRS, HERE), 4)).toEqual({
      kind: 'refuse',
      reason,
    });
  });
});

describe(`${decideBinding.name} of a provisional claim`, () => {
  it('confirms a claim made for where its database is, or for no place', () => {
    expect(decideBinding(ours(false), spoolOf(PROVISIONAL_ID, HERE), 2)).toEqual({
      kind: 'confirm',
    });
    expect(decideBinding(ours(true), spoolOf(PROVISIONAL_ID, null), 0)).toEqual({
      kind: 'confirm',
    });
  });

  it("refuses a claim made for a database elsewhere: its journals may be that one's", () => {
    expect(decideBinding(ours(false), spoolOf(PROVISIONAL_ID, ELSEWHERE), 1)).toEqual({
      kind: 'refuse',
      reason: `its database.id was written for the database at ${ELSEWHERE} before that database answered, and this instance's database is ${OURS} at ${HERE}`,
    });
  });
});

class FakeIdStore implements DatabaseIdStore {
  id: string | null = null;
  location: string | null = ELSEWHERE;
  readError: Error | null = null;
  // What another instance writes first, just before this one's claim lands.
  claimedMeanwhile: string | null = null;
  readonly calls: string[] = [];

  async read(): Promise<SpoolDatabaseRecord | null> {
    this.calls.push('read');
    if (this.readError) throw this.readError;
    return this.id === null ? null : { id: this.id, location: this.location };
  }

  async create(record: SpoolDatabaseRecord): Promise<SpoolDatabaseRecord> {
    this.calls.push(`create ${record.id} ${record.location}`);
    if (this.id === null) {
      this.id = this.claimedMeanwhile ?? record.id;
      this.location = this.claimedMeanwhile ? ELSEWHERE : record.location;
    }
    return { id: this.id, location: this.location };
  }

  async replace(record: SpoolDatabaseRecord): Promise<SpoolDatabaseRecord> {
    this.calls.push(`replace ${record.id} ${record.location}`);
    this.id = record.id;
    this.location = record.location;
    return record;
  }
}

class FakeDatabase implements SpoolDatabase {
  readonly location = HERE;
  answer: DatabaseIdentity | Error = ours(false);
  calls = 0;
  // When set, answers wait for it.
  gate: Promise<void> | null = null;

  async identity(): Promise<DatabaseIdentity> {
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
  let directoryIsReal: boolean;
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
    directoryIsReal = true;
    sut = new DatabaseBinding(
      DIR,
      idFile,
      database,
      async () => foreign,
      logger,
      async () => directoryIsReal,
    );
  });

  const refusal = (reason: string) =>
    `Refusing the spool at ${DIR}: ${reason}. Its journals are not adopted and nothing is journaled there (what the database cannot take is BUFFERED); one SPOOL_DIR serves the instances of one database only`;

  it('is pending before any check, and lets this instance journal meanwhile', async () => {
    expect(sut.status).toEqual({
      databaseCheck: DatabaseCheck.PENDING,
      databaseId: null,
      instanceDatabaseId: null,
      databaseCheckReason: 'the database has not answered yet',
    });
    await expect(sut.assertJournalable()).resolves.toBeUndefined();
    expect(database.calls).toBe(0);
  });

  it('claims a spool without database.id for its database, and says so once', async () => {
    expect(await sut.verify()).toBe(true);
    expect(idFile.calls).toEqual(['read', `create ${OURS} ${HERE}`]);
    expect(sut.status).toEqual({
      databaseCheck: DatabaseCheck.VERIFIED,
      databaseId: OURS,
      instanceDatabaseId: OURS,
      databaseCheckReason: null,
    });
    expect(await sut.verify()).toBe(true);
    expect(idFile.calls).toEqual(['read', `create ${OURS} ${HERE}`, 'read']);
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

  it('refuses, for a database new now elsewhere, a spool without segments of others', async () => {
    // Two new databases started at once on one empty spool: the first claim stands.
    idFile.id = THEIRS;
    database.answer = ours(true);
    expect(await sut.verify()).toBe(false);
    expect(idFile.calls).toEqual(['read']);
    expect(sut.status).toMatchObject({ databaseCheck: 'REFUSED', databaseId: THEIRS });
  });

  it('takes over, for a database new now where the spool says its database was, a spool with segments', async () => {
    idFile.id = THEIRS;
    idFile.location = HERE;
    database.answer = ours(true);
    foreign = 2;
    expect(await sut.verify()).toBe(true);
    expect(idFile.calls).toEqual(['read', `replace ${OURS} ${HERE}`]);
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
    await expect(sut.assertJournalable()).rejects.toThrow(SpoolOfAnotherDatabase);
    await expect(sut.assertJournalable()).rejects.toThrow(
      `the spool belongs to another database: ${reason}`,
    );
  });

  it('refuses, rather than claims, for a new database a spool with segments of another', async () => {
    idFile.id = THEIRS;
    database.answer = ours(true);
    foreign = 1;
    expect(await sut.verify()).toBe(false);
    expect(idFile.id).toBe(THEIRS);
    expect(idFile.calls).toEqual(['read']);
    expect(sut.status.databaseCheckReason).toBe(
      `its database.id names database ${THEIRS}, and this instance's database is ${OURS} (a new database, not where the spool's database was; the spool holds 1 segment(s) of other instances)`,
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
    await expect(sut.assertJournalable()).resolves.toBeUndefined();

    database.answer = ours(false);
    expect(await sut.verify()).toBe(true);
    expect(sut.status.databaseCheck).toBe(DatabaseCheck.VERIFIED);
  });

  it('keeps its verdict while the database is away', async () => {
    expect(await sut.verify()).toBe(true);
    database.answer = new Error('gone');
    expect(await sut.verify()).toBe(true);
    expect(sut.status.databaseCheck).toBe(DatabaseCheck.VERIFIED);

    idFile.id = THEIRS;
    database.answer = ours(false);
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
    await expect(sut.assertJournalable()).resolves.toBeUndefined();
    expect(logs.map((line) => line.level)).toEqual(['warn']);
  });

  it('accepts the spool again once it is fixed, and says so', async () => {
    idFile.id = THEIRS;
    expect(await sut.verify()).toBe(false);
    idFile.id = null;
    expect(await sut.verify()).toBe(true);
    await expect(sut.assertJournalable()).resolves.toBeUndefined();
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
  describe('before its database has answered', () => {
    beforeEach(() => {
      database.answer = new Error('connect ECONNREFUSED');
    });

    it('claims a spool that names no database provisionally, then confirms it', async () => {
      await expect(sut.assertJournalable()).resolves.toBeUndefined();
      await expect(sut.assertJournalable()).resolves.toBeUndefined();
      expect(idFile.calls).toEqual(['read', `create ${PROVISIONAL_ID} ${HERE}`]);
      expect(idFile.id).toBe(PROVISIONAL_ID);

      database.answer = ours(false);
      expect(await sut.verify()).toBe(true);
      expect(idFile.calls.slice(2)).toEqual(['read', `replace ${OURS} ${HERE}`]);
      expect(logs).toEqual([
        { level: 'log', message: `The spool at ${DIR} claimed for database ${OURS}` },
      ]);
    });

    it('journals into a spool claimed for where its database is', async () => {
      idFile.id = THEIRS;
      idFile.location = HERE;
      await expect(sut.assertJournalable()).resolves.toBeUndefined();
      idFile.location = null;
      expect(await sut.verify()).toBe(false);
      await expect(sut.assertJournalable()).resolves.toBeUndefined();
      expect(idFile.calls).not.toContain(`create ${PROVISIONAL_ID} ${HERE}`);
    });

    it('journals nothing into a spool of a database elsewhere, saying why once', async () => {
      idFile.id = THEIRS;
      const reason = `its database.id names database ${THEIRS} at ${ELSEWHERE}, and this instance's database, at ${HERE}, has not answered yet: nothing is journaled here until it has`;

      await expect(sut.assertJournalable()).rejects.toThrow(SpoolOfAnotherDatabase);
      await expect(sut.assertJournalable()).rejects.toThrow(
        `the spool may belong to another database: ${reason}`,
      );
      expect(sut.status).toMatchObject({ databaseCheck: 'PENDING', databaseCheckReason: reason });
      expect(idFile.calls).toEqual(['read']);
      expect(logs).toEqual([
        { level: 'warn', message: `Not journaling into the spool at ${DIR}: ${reason}` },
      ]);

      // The check, whatever it finds, has the last word.
      database.answer = ours(false);
      expect(await sut.verify()).toBe(false);
      expect(sut.status.databaseCheck).toBe(DatabaseCheck.REFUSED);
    });

    it('names a provisional claim elsewhere as such, and refuses it once its database answers', async () => {
      idFile.id = PROVISIONAL_ID;
      await expect(sut.assertJournalable()).rejects.toThrow(
        `the spool may belong to another database: its database.id names a database at ${ELSEWHERE}, and this instance's database, at ${HERE}, has not answered yet: nothing is journaled here until it has`,
      );

      database.answer = ours(true);
      expect(await sut.verify()).toBe(false);
      expect(sut.status).toMatchObject({
        databaseCheck: 'REFUSED',
        databaseCheckReason: `its database.id was written for the database at ${ELSEWHERE} before that database answered, and this instance's database is ${OURS} at ${HERE}`,
      });
      expect(idFile.id).toBe(PROVISIONAL_ID);
    });

    it('reads database.id again after each check, so that a fixed spool is used', async () => {
      idFile.id = THEIRS;
      await expect(sut.assertJournalable()).rejects.toThrow(SpoolOfAnotherDatabase);
      idFile.location = HERE;
      await expect(sut.assertJournalable()).rejects.toThrow(SpoolOfAnotherDatabase);
      expect(await sut.verify()).toBe(false);
      await expect(sut.assertJournalable()).resolves.toBeUndefined();
      expect(sut.status.databaseCheckReason).toBe(
        'the database has not answered yet: connect ECONNREFUSED',
      );
    });

    it('claims nothing through a SPOOL_DIR that is a symlink or gone, and asks again next time', async () => {
      directoryIsReal = false;
      await expect(sut.assertJournalable()).resolves.toBeUndefined();
      expect(idFile.calls).toEqual([]);

      directoryIsReal = true;
      await expect(sut.assertJournalable()).resolves.toBeUndefined();
      expect(idFile.calls).toEqual(['read', `create ${PROVISIONAL_ID} ${HERE}`]);
    });

    it('journals as before when database.id cannot be read, and reads it again next time', async () => {
      idFile.readError = Object.assign(new Error('permission denied'), { code: 'EACCES' });
      await expect(sut.assertJournalable()).resolves.toBeUndefined();
      await expect(sut.assertJournalable()).resolves.toBeUndefined();
      expect(idFile.calls).toEqual(['read', 'read']);
    });
  });
});
