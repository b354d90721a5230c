import { jest } from '@jest/globals';
import { type ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { type Scope } from '../../config/access-settings.js';
import { ScribeErrorCode } from '../errors/scribe-error-code.js';
import { ScribeException } from '../errors/scribe.exception.js';
import { type Authentication, type Authenticator, type Principal } from './authenticator.js';
import { OWN_SESSIONS, RequireScope, ScopeGuard, callerSessionPrefix } from './scope.guard.js';

class Fields {
  @RequireScope('read', 'id')
  session() {}

  @RequireScope('append', 'input.sessionId')
  appendMessage() {}

  @RequireScope('read', OWN_SESSIONS)
  sessions() {}

  @RequireScope('admin')
  gateStatus() {}

  undeclared() {}
}

const principal = (scopes: Scope[], sessionPrefix?: string): Principal => ({
  anonymous: false,
  who: 'jwt u1',
  key: 'jwt u1',
  scopes: new Set(scopes),
  sessionPrefix,
});

/** The guard over one root field, as Nest calls it for a GraphQL resolver. */
function guard(authentication: Authentication) {
  const authenticator = { forRequest: async () => authentication } as unknown as Authenticator;
  const scopeGuard = new ScopeGuard(new Reflector(), authenticator);
  return async (field: keyof Fields, args: Record<string, unknown> = {}, parentType = 'Query') => {
    const context: Record<string, unknown> = { req: {} };
    const info = { parentType: { name: parentType }, fieldName: field };
    const execution = {
      getType: () => 'graphql',
      getHandler: () => Object.getOwnPropertyDescriptor(Fields.prototype, field)?.value as unknown,
      getClass: () => Fields,
      getArgs: () => [undefined, args, context, info],
      getArgByIndex: (index: number) => [undefined, args, context, info][index],
    } as unknown as ExecutionContext;
    const allowed = await scopeGuard.canActivate(execution);
    return { allowed, context };
  };
}

async function refusal(run: Promise<unknown>) {
  const error = await run.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(ScribeException);
  return { code: (error as ScribeException).code, message: (error as Error).message };
}

describe('ScopeGuard', () => {
  const u1 = guard({ kind: 'principal', principal: principal(['read', 'append'], 'u1-') });
  const everyone = guard({ kind: 'principal', principal: principal(['read']) });

  it('lets a caller limited to a prefix reach a session under it, named where the field says', async () => {
    await expect(u1('session', { id: 'u1-chat' })).resolves.toMatchObject({ allowed: true });
    await expect(u1('appendMessage', { input: { sessionId: 'u1-chat' } })).resolves.toMatchObject({
      allowed: true,
    });
  });

  it('refuses it a session of another prefix, or one it cannot find in the arguments', async () => {
    expect(await refusal(u1('session', { id: 'u2-chat' }))).toEqual({
      code: ScribeErrorCode.Forbidden,
      message: 'session: this caller may only reach sessions whose id starts with "u1-"',
    });
    expect((await refusal(u1('appendMessage', { input: { sessionId: 'u2-x' } }))).code).toBe(
      ScribeErrorCode.Forbidden,
    );
    expect((await refusal(u1('appendMessage', { input: null }))).code).toBe(
      ScribeErrorCode.Forbidden,
    );
    expect((await refusal(u1('session', { id: 7 }))).code).toBe(ScribeErrorCode.Forbidden);
  });

  it('lets it list its own sessions, and records the caller for the resolver', async () => {
    const { allowed, context } = await u1('sessions');
    expect(allowed).toBe(true);
    expect(callerSessionPrefix(context)).toBe('u1-');
  });

  it('keeps its record of the caller off the context, where a host may write its own', async () => {
    const { context } = await u1('sessions');
    expect(context).toEqual({ req: {} });
    context.principal = { sessionPrefix: undefined, scopes: new Set(['admin']) };
    expect(callerSessionPrefix(context)).toBe('u1-');
  });

  it('refuses it a list of everyone’s, whatever its scopes', async () => {
    const admin = guard({ kind: 'principal', principal: principal(['admin', 'read'], 'u1-') });
    expect((await refusal(admin('gateStatus'))).code).toBe(ScribeErrorCode.Forbidden);
  });

  it('lets a caller without a prefix reach any session and list all of them', async () => {
    await expect(everyone('session', { id: 'u2-chat' })).resolves.toMatchObject({ allowed: true });
    const { context } = await everyone('sessions');
    expect(callerSessionPrefix(context)).toBeUndefined();
  });

  it('refuses a missing scope, refused credentials, and a root field that declares none', async () => {
    expect(await refusal(everyone('appendMessage', { input: { sessionId: 'a' } }))).toMatchObject({
      code: ScribeErrorCode.Forbidden,
    });
    const refused = guard({
      kind: 'refused',
      reason: 'The bearer token is not one this server accepts',
    });
    expect(await refusal(refused('session', { id: 'a' }))).toEqual({
      code: ScribeErrorCode.Unauthenticated,
      message: 'The bearer token is not one this server accepts',
    });
    expect(await refusal(everyone('undeclared'))).toEqual({
      code: ScribeErrorCode.Forbidden,
      message: 'undeclared declares no scope',
    });
  });

  it('leaves a field below the root, which declares nothing, to the field check', async () => {
    const refused = guard({ kind: 'refused', reason: 'no' });
    await expect(refused('undeclared', {}, 'Session')).resolves.toMatchObject({ allowed: true });
  });
});

describe('ScopeGuard outside GraphQL', () => {
  it('leaves an HTTP route alone (its own checks run before it)', async () => {
    const forRequest = jest.fn();
    const scopeGuard = new ScopeGuard(new Reflector(), { forRequest } as unknown as Authenticator);
    const http = { getType: () => 'http' } as unknown as ExecutionContext;
    await expect(scopeGuard.canActivate(http)).resolves.toBe(true);
    expect(forRequest).not.toHaveBeenCalled();
  });
});

describe('callerSessionPrefix', () => {
  it('refuses a list when no caller was checked, rather than list everyone’s', () => {
    expect(() => callerSessionPrefix({})).toThrow('The caller was not checked');
    // A principal someone else put on the context is not one Scribe checked.
    const forged = { principal: { sessionPrefix: undefined } };
    expect(() => callerSessionPrefix(forged)).toThrow('The caller was not checked');
  });
});
