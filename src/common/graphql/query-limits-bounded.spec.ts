import { buildSchema, Kind, parse, type OperationDefinitionNode } from 'graphql';
import { asScribeRoots } from '../testing/scribe-roots.js';
import { queryLimitsPlugin, type BoundedOperations } from './query-limits.plugin.js';

// Scribe's `sessions` beside a host's `hostNode`, which declares no scope and nests deep.
const schema = asScribeRoots(
  buildSchema(`
  type Query {
    sessions(first: Int, ids: [ID!]): SessionConnection!
    hostNode: HostNode
  }
  type SessionConnection { totalCount: Int! }
  type HostNode { name: String, child: HostNode }
  `),
);
(schema.getQueryType()?.getFields().hostNode as { extensions: object }).extensions = {};

/** The host's field, selected `depth` fields deep. */
const deepHost = (depth: number) =>
  `hostNode ${'{ child '.repeat(depth - 2)}{ name }${' }'.repeat(depth - 2)}`;

/** The plugin's refusal of `text` (its operation `name`, or its only one), or undefined. */
async function refusalOf(
  bounded: BoundedOperations,
  text: string,
  { name, variables }: { name?: string; variables?: Record<string, unknown> } = {},
) {
  const listener = await queryLimitsPlugin(10, bounded).requestDidStart!({} as never);
  const document = parse(text);
  const operation = document.definitions.find(
    (node): node is OperationDefinitionNode =>
      node.kind === Kind.OPERATION_DEFINITION && (name === undefined || node.name?.value === name),
  );
  try {
    await listener!.didResolveOperation!({
      request: { query: text, variables, operationName: name },
      document,
      schema,
      operation,
    } as never);
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

describe(`${queryLimitsPlugin.name} on a host's endpoint ('scribe')`, () => {
  it("leaves an operation of the host's fields to the host, meta fields in it or not", async () => {
    expect(await refusalOf('scribe', `{ ${deepHost(20)} }`)).toBeUndefined();
    expect(await refusalOf('scribe', `{ __typename ${deepHost(20)} }`)).toBeUndefined();
  });

  it("judges an operation with Scribe's fields whole, the host's fields included", async () => {
    expect(
      await refusalOf('scribe', `{ sessions { totalCount } ${deepHost(12)} }`),
    ).toBeUndefined();
    expect(await refusalOf('scribe', `{ sessions { totalCount } ${deepHost(13)} }`)).toMatch(
      /Query depth 13 exceeds the limit of 12/,
    );
  });

  it('judges the operation that runs, not the others of its document', async () => {
    const text = `query Host { ${deepHost(20)} } query Mine { sessions { totalCount } }`;
    expect(await refusalOf('scribe', text, { name: 'Mine' })).toBeUndefined();
  });

  it("refuses an oversized list in an operation with Scribe's fields only", async () => {
    const variables = { ids: Array.from({ length: 1001 }, String) };
    const mine = 'query($ids: [ID!]) { sessions(ids: $ids) { totalCount } }';
    expect(await refusalOf('scribe', mine, { variables })).toMatch(/1001 items/);
    const meta = 'query($ids: [ID!]) { __typename }';
    expect(await refusalOf('scribe', meta, { variables })).toBeUndefined();
  });
});

describe(`${queryLimitsPlugin.name} on Scribe's own endpoint ('every')`, () => {
  it('bounds an operation of meta fields only, as it always did', async () => {
    const variables = { ids: Array.from({ length: 1001 }, String) };
    const meta = 'query($ids: [ID!]) { __typename }';
    expect(await refusalOf('every', meta, { variables })).toMatch(/1001 items/);
  });
});
