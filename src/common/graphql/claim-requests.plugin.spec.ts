import { buildSchema, parse } from 'graphql';
import { FIELD_SCOPE } from '../auth/field-scope.js';
import { claimRequestsPlugin } from './claim-requests.plugin.js';

const schema = buildSchema('type Query { session: Int, hello: String }');
const session = schema.getQueryType()?.getFields().session as { extensions: object };
session.extensions = { [FIELD_SCOPE]: 'read' };

type Hook = 'didResolveOperation' | 'didEncounterErrors';

/** Whether the plugin claims a request of `query` for Scribe, from `hook`. */
async function claims(
  query: string | undefined,
  { hook = 'didResolveOperation', operationName }: { hook?: Hook; operationName?: string } = {},
) {
  const res = { locals: {} as Record<string, unknown> };
  const listener = await claimRequestsPlugin().requestDidStart!({} as never);
  const document = query === undefined ? undefined : parse(query);
  const operation = hook === 'didResolveOperation' ? document?.definitions[0] : undefined;
  await listener![hook]!({
    schema,
    document,
    operation,
    request: { operationName },
    contextValue: { req: { res } },
  } as never);
  return Object.keys(res.locals).length > 0;
}

describe(claimRequestsPlugin.name, () => {
  it("claims an operation that selects Scribe's fields, the host's beside them or not", async () => {
    expect(await claims('{ session }')).toBe(true);
    expect(await claims('{ hello session }')).toBe(true);
  });

  it("leaves the host's operations unclaimed, meta fields in them or not", async () => {
    expect(await claims('{ hello }')).toBe(false);
    expect(await claims('{ hello __typename }')).toBe(false);
    expect(await claims('{ __schema { queryType { name } } }')).toBe(false);
  });

  it('judges a document that failed validation by the operation it names', async () => {
    const both = 'query Host { hello nope } query Mine { session nope }';
    const hook = 'didEncounterErrors';
    expect(await claims(both, { hook, operationName: 'Mine' })).toBe(true);
    expect(await claims(both, { hook, operationName: 'Host' })).toBe(false);
    expect(await claims('{ session nope }', { hook })).toBe(true);
  });

  it('claims no document that did not parse', async () => {
    expect(await claims(undefined, { hook: 'didEncounterErrors' })).toBe(false);
  });
});
