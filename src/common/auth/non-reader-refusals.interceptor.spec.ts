import { type CallHandler, type ExecutionContext } from '@nestjs/common';
import { lastValueFrom, of, throwError } from 'rxjs';
import { ScribeErrorCode } from '../errors/scribe-error-code.js';
import { ScribeException } from '../errors/scribe.exception.js';
import { type Authentication, type Authenticator } from './authenticator.js';
import { NonReaderRefusalsInterceptor } from './non-reader-refusals.interceptor.js';

const blind = new ScribeException(ScribeErrorCode.RevisionConflict, 'not at revision 7');
const detailed = new ScribeException(ScribeErrorCode.NotFound, 'no session "s"', 'input.id', blind);

function intercept(outcome: Authentication, handle: CallHandler, type = 'graphql') {
  const authenticator = { forRequest: () => Promise.resolve(outcome) } as unknown as Authenticator;
  // What Nest hands a resolver's interceptor: (parent, args, context, info).
  const context = {
    getType: () => type,
    getArgs: () => [undefined, {}, { req: {} }, {}],
    getArgByIndex: (index: number) => [undefined, {}, { req: {} }, {}][index],
    getClass: () => Object,
    getHandler: () => () => undefined,
  } as unknown as ExecutionContext;
  return lastValueFrom(new NonReaderRefusalsInterceptor(authenticator).intercept(context, handle));
}

const caller = (scopes: string[]): Authentication => ({
  kind: 'principal',
  principal: {
    anonymous: false,
    who: 'x',
    key: 'x',
    scopes: new Set(scopes) as never,
    sessionPrefix: undefined,
  },
});
const failing = (error: unknown): CallHandler => ({ handle: () => throwError(() => error) });

describe(NonReaderRefusalsInterceptor.name, () => {
  it('tells a caller without read what toNonReaders says', async () => {
    await expect(intercept(caller(['append']), failing(detailed))).rejects.toBe(blind);
    await expect(intercept({ kind: 'refused', reason: 'x' }, failing(detailed))).rejects.toBe(
      blind,
    );
  });

  it('tells a reader the whole refusal', async () => {
    await expect(intercept(caller(['read', 'append']), failing(detailed))).rejects.toBe(detailed);
  });

  it('passes other errors and answers through untouched', async () => {
    const plain = new ScribeException(ScribeErrorCode.BadUserInput, 'bad');
    await expect(intercept(caller(['append']), failing(plain))).rejects.toBe(plain);
    const boom = new Error('boom');
    await expect(intercept(caller(['append']), failing(boom))).rejects.toBe(boom);
    await expect(intercept(caller([]), { handle: () => of('answer') })).resolves.toBe('answer');
    await expect(intercept(caller([]), failing(detailed), 'http')).rejects.toBe(detailed);
  });
});
