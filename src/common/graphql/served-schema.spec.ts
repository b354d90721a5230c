import { buildSchema, type GraphQLSchema } from 'graphql';
import { ServedSchema } from './served-schema.js';

type Start = (service: { schema: GraphQLSchema }) => Promise<unknown>;

describe(ServedSchema.name, () => {
  it('has no schema before a server started', () => {
    expect(new ServedSchema().schema).toBeUndefined();
  });

  it('records the schema the server of its plugin starts with, the latest one', async () => {
    const served = new ServedSchema();
    const first = buildSchema('type Query { a: Int }');
    const second = buildSchema('type Query { b: Int }');
    const plugin = served.plugin();
    const start: Start = (service) =>
      plugin.serverWillStart?.(service as never) ?? Promise.resolve();

    await expect(start({ schema: first })).resolves.toBeUndefined();
    expect(served.schema).toBe(first);
    await start({ schema: second });
    expect(served.schema).toBe(second);
  });
});
