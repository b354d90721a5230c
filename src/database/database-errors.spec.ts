import { jest } from '@jest/globals';
import { ScribeErrorCode } from '../common/errors/scribe-error-code.js';
import { ScribeException } from '../common/errors/scribe.exception.js';
import { DatabaseNotReadyError } from './database-readiness.js';
import {
  DatabaseReadError,
  DatabaseWriteError,
  classifyDatabaseError,
  fromDatabase,
  isRetriedTransactionFailure,
  readFailure,
  retryingDeadlocks,
  writeFailure,
} from './database-errors.js';

const coded = (code: string, message: string) => Object.assign(new Error(message), { code });

describe(readFailure.name, () => {
  it('turns an outage into DATABASE_UNAVAILABLE, the driver error kept for the logs only', () => {
    const sut = readFailure(coded('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432'));

    expect(sut).toBeInstanceOf(DatabaseReadError);
    expect(sut).toBeInstanceOf(ScribeException);
    expect((sut as DatabaseReadError).code).toBe(ScribeErrorCode.DatabaseUnavailable);
    expect((sut as DatabaseReadError).reason).toBe('connect ECONNREFUSED 127.0.0.1:5432');
    // The client hears neither the host nor the path.
    expect((sut as Error).message).toBe(
      'The database cannot be read now; appends are journaled meanwhile. Retry the read later.',
    );
  });

  it('names the driver error a TypeORM QueryFailedError wraps, with its code', () => {
    const wrapped = Object.assign(new Error('query failed'), {
      driverError: coded('SQLITE_IOERR', 'disk I/O error'),
    });

    expect((readFailure(wrapped) as DatabaseReadError).reason).toBe('SQLITE_IOERR: disk I/O error');
  });

  it('takes an error without a code (a connection the driver lost) for an outage', () => {
    const sut = readFailure(new Error('Connection terminated unexpectedly'));

    expect((sut as DatabaseReadError).reason).toBe('Connection terminated unexpectedly');
  });

  it('leaves a Scribe error as it is: not ready yet, or a bound of the read', () => {
    const notReady = new DatabaseNotReadyError('ECONNREFUSED');
    const timeout = new ScribeException(ScribeErrorCode.SessionResolveTimeout, 'waited too long');

    expect(readFailure(notReady)).toBe(notReady);
    expect(readFailure(timeout)).toBe(timeout);
  });

  it.each([
    new TypeError('x is undefined'),
    new RangeError('bad length'),
    new ReferenceError('y is not defined'),
    new SyntaxError('bad JSON'),
  ])('leaves an error of the code itself a fault: %s', (error) => {
    expect(readFailure(error)).toBe(error);
  });

  it('leaves a refusal of the database a fault, not an outage', () => {
    const refused = coded('22P02', 'invalid input syntax');

    expect(classifyDatabaseError(refused).kind).toBe('refused');
    expect(readFailure(refused)).toBe(refused);
  });
});

describe(fromDatabase.name, () => {
  it('answers what the read answers', async () => {
    await expect(fromDatabase(Promise.resolve(7))).resolves.toBe(7);
  });

  it('answers an outage of the read as DATABASE_UNAVAILABLE', async () => {
    const read = Promise.reject(coded('ECONNRESET', 'read ECONNRESET'));

    await expect(fromDatabase(read)).rejects.toEqual(
      expect.objectContaining({
        code: ScribeErrorCode.DatabaseUnavailable,
        reason: 'read ECONNRESET',
      }),
    );
  });

  it('leaves a fault of the read as it is', async () => {
    const fault = new TypeError('x is undefined');

    await expect(fromDatabase(Promise.reject(fault))).rejects.toBe(fault);
  });
});

describe(writeFailure.name, () => {
  const said = 'Session s was not updated';

  it('turns an outage into DATABASE_UNAVAILABLE saying what was not done', () => {
    const sut = writeFailure(coded('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432'), said);

    expect(sut).toBeInstanceOf(DatabaseWriteError);
    expect(sut).toMatchObject({
      code: ScribeErrorCode.DatabaseUnavailable,
      message: said,
      reason: 'connect ECONNREFUSED 127.0.0.1:5432',
    });
  });

  it.each([
    new DatabaseNotReadyError('starting'),
    new TypeError('x is undefined'),
    coded('23505', 'duplicate key'),
  ])('leaves a Scribe error, a fault or a refusal as it is: %s', (error) => {
    expect(writeFailure(error, said)).toBe(error);
  });
});

describe(classifyDatabaseError.name, () => {
  it.each([
    ['22P02', 'refused'],
    ['23505', 'refused'],
    // A value past PostgreSQL's own limits (a tsvector over 1 MiB) fails each time it is written.
    ['54000', 'refused'],
    ['54001', 'refused'],
    ['08006', 'unavailable'],
    ['53300', 'unavailable'],
    ['57P01', 'unavailable'],
    ['40001', 'unavailable'],
    ['55000', 'unavailable'],
    ['5400', 'unavailable'],
    ['SQLITE_TOOBIG', 'refused'],
    ['SQLITE_BUSY', 'unavailable'],
  ])('takes SQLSTATE or driver code %s as %s', (code, kind) => {
    expect(classifyDatabaseError(coded(code, 'x')).kind).toBe(kind);
  });

  it.each([
    ['SQLITE_FULL', true],
    ['SQLITE_IOERR', false],
    ['53100', false],
  ])('says a full disk from driver code %s: %s', (code, diskFull) => {
    expect(classifyDatabaseError(coded(code, 'x'))).toEqual({ kind: 'unavailable', diskFull });
  });

  it('reads the code of the driver error TypeORM wraps', () => {
    const wrapped = { driverError: coded('SQLITE_FULL', 'database or disk is full') };

    expect(classifyDatabaseError(wrapped)).toEqual({ kind: 'unavailable', diskFull: true });
  });
});

describe(isRetriedTransactionFailure.name, () => {
  it.each([
    ['40P01', true],
    ['40001', true],
    ['40002', false],
    ['23505', false],
    ['57P01', false],
    ['SQLITE_BUSY', false],
  ])('takes SQLSTATE or driver code %s for a transaction to try again: %s', (code, retried) => {
    expect(isRetriedTransactionFailure(coded(code, 'x'))).toBe(retried);
  });

  it('reads the code of the driver error TypeORM wraps, and takes an error without one as none', () => {
    expect(isRetriedTransactionFailure({ driverError: coded('40P01', 'deadlock detected') })).toBe(
      true,
    );
    expect(isRetriedTransactionFailure(new Error('connection terminated'))).toBe(false);
    expect(isRetriedTransactionFailure(undefined)).toBe(false);
  });
});

describe(retryingDeadlocks.name, () => {
  /** A transaction that fails with each of `failures` in turn, then answers 'done'. */
  const failing = (...failures: Error[]) =>
    jest.fn(async () => {
      const failure = failures.shift();
      if (failure) throw failure;
      return 'done';
    });

  it('answers what the transaction answers, run once', async () => {
    const transaction = failing();

    await expect(retryingDeadlocks(transaction)).resolves.toBe('done');
    expect(transaction).toHaveBeenCalledTimes(1);
  });

  it("runs a deadlock's victim again, up to three more times", async () => {
    const deadlock = () => coded('40P01', 'deadlock detected');
    const recovered = failing(deadlock(), coded('40001', 'could not serialize'), deadlock());

    await expect(retryingDeadlocks(recovered)).resolves.toBe('done');
    expect(recovered).toHaveBeenCalledTimes(4);

    const last = deadlock();
    const stuck = failing(deadlock(), deadlock(), deadlock(), last);
    await expect(retryingDeadlocks(stuck)).rejects.toBe(last);
    expect(stuck).toHaveBeenCalledTimes(4);
  });

  it('throws any other failure at once', async () => {
    const outage = coded('57P01', 'terminating connection');
    const transaction = failing(outage);

    await expect(retryingDeadlocks(transaction)).rejects.toBe(outage);
    expect(transaction).toHaveBeenCalledTimes(1);
  });
});
