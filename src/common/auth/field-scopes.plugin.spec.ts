import { buildSchema, parse, type GraphQLError, type OperationDefinitionNode } from 'graphql';
import { type Request } from 'express';
import { asScribeRoots } from '../testing/scribe-roots.js';
import { ScribeErrorCode } from '../errors/scribe-error-code.js';
import { ScribeException } from '../errors/scribe.exception.js';
import { type Authentication, type Principal } from './authenticator.js';
import { FIELD_SCOPE } from './field-scope.js';
import { fieldScopeRefusal, fieldScopesPlugin } from './field-scopes.plugin.js';

const schema = asScribeRoots(
  buildSchema('type Query { s: S } type S { id: ID, title: String }'),
  'append',
);
const fields = (
  schema.getType('S') as unknown as { getFields(): Record<string, { extensions: object }> }
).getFields();
fields.id.extensions = { [FIELD_SCOPE]: 'public' };
fields.title.extensions = { [FIELD_SCOPE]: 'read' };

const principal = (scopes: string[], anonymous = false) =>
  ({
    anonymous,
    who: 'x',
    key: 'x',
    scopes: new Set(scopes),
    sessionPrefix: undefined,
  }) as Principal;

function refusal(query: string, caller: Principal): GraphQLError | undefined {
  const document = parse(query);
  return fieldScopeRefusal(
    schema,
    document,
    document.definitions[0] as OperationDefinitionNode,
    caller,
  );
}

describe(fieldScopeRefusal.name, () => {
  it('refuses a token lacking the scope with FORBIDDEN and HTTP 403, naming the field', () => {
    const error = refusal('{ s { id title } }', principal(['append']));
    expect(error?.message).toBe('S.title needs the read scope, which this caller lacks');
    expect(error?.extensions.http).toEqual({ status: 403 });
    expect(error?.originalError).toBeInstanceOf(ScribeException);
    expect((error?.originalError as ScribeException).code).toBe(ScribeErrorCode.Forbidden);
  });

  it('asks an anonymous caller for a token, with UNAUTHENTICATED and HTTP 401', () => {
    const error = refusal('{ s { title } }', principal(['append'], true));
    expect((error?.originalError as ScribeException).code).toBe(ScribeErrorCode.Unauthenticated);
    expect(error?.message).toMatch(
      /S.title needs Authorization: Bearer <token> with the read scope/,
    );
    expect(error?.extensions.http).toEqual({ status: 401 });
  });

  it('answers nothing for what the caller may see', () => {
    expect(refusal('{ s { id title } }', principal(['read']))).toBeUndefined();
    expect(refusal('{ s { id } }', principal([]))).toBeUndefined();
  });
});

describe(fieldScopesPlugin.name, () => {
  async function run(outcome: Authentication, query: string): Promise<unknown> {
    const asked: Request[] = [];
    const req = {} as Request;
    const sut = fieldScopesPlugin({
      forRequest: (request) => {
        asked.push(request);
        return Promise.resolve(outcome);
      },
    });
    const document = parse(query);
    const listener = await sut.requestDidStart!({} as never);
    const hook = (listener as { didResolveOperation: (context: unknown) => Promise<void> })
      .didResolveOperation;
    try {
      await hook({ schema, document, operation: document.definitions[0], contextValue: { req } });
    } finally {
      expect(asked).toEqual([req]);
    }
    return undefined;
  }

  it('refuses the request of a caller that selects what it may not see', async () => {
    await expect(
      run({ kind: 'principal', principal: principal(['append']) }, '{ s { title } }'),
    ).rejects.toThrow('S.title needs the read scope');
  });

  it('lets through a permitted selection', async () => {
    await expect(
      run({ kind: 'principal', principal: principal(['read']) }, '{ s { title } }'),
    ).resolves.toBeUndefined();
  });

  // On a host's endpoint ('host' mode) no HTTP step refuses bad credentials before GraphQL:
  // Scribe's part of the operation is refused here, UNAUTHENTICATED with 401.
  it("refuses Scribe's part of an operation whose credentials were refused", async () => {
    const refused = run({ kind: 'refused', reason: 'no' }, '{ s { title } }');
    await expect(refused).rejects.toThrow('no');
    const error = (await refused.catch((caught: unknown) => caught)) as GraphQLError;
    expect((error.originalError as ScribeException).code).toBe(ScribeErrorCode.Unauthenticated);
    expect(error.extensions.http).toEqual({ status: 401 });
  });
});
