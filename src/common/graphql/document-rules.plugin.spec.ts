import { buildSchema, GraphQLError, Kind, parse } from 'graphql';
import { FIELD_SCOPE } from '../auth/field-scope.js';
import { ScribeErrorCode } from '../errors/scribe-error-code.js';
import { queryProtection } from './query-protection.js';
import { documentRulesPlugin, hasMoreTokens } from './document-rules.plugin.js';
import { type QueryLimitSettings } from '../../config/scribe-config.js';

const schema = buildSchema('type Query { session: Int, hello: String }');
const session = schema.getQueryType()?.getFields().session as { extensions: object };
session.extensions = { [FIELD_SCOPE]: 'read' };

const limits = { maxTokens: 100, maxAliases: 5, maxFullReads: 10 } as QueryLimitSettings;
const rules = queryProtection(limits).validationRules;

/** The plugin's refusal of `query` (its operation `name`, or its first), or undefined. */
async function refusalOf(query: string, name?: string) {
  const document = parse(query);
  const plugin = documentRulesPlugin(limits.maxTokens, rules);
  const listener = await plugin.requestDidStart!({} as never);
  const operation = document.definitions.find(
    (node) =>
      node.kind === Kind.OPERATION_DEFINITION && (name === undefined || node.name?.value === name),
  );
  try {
    await listener!.didResolveOperation!({ schema, document, operation, source: query } as never);
    return undefined;
  } catch (error) {
    expect(error).toBeInstanceOf(GraphQLError);
    const refused = error as GraphQLError;
    expect(refused.extensions.code).toBe(ScribeErrorCode.QueryTooComplex);
    return refused.message;
  }
}

const aliases = (count: number, field: string) =>
  Array.from({ length: count }, (_, i) => `a${i}: ${field}`).join(' ');

describe(hasMoreTokens.name, () => {
  it("counts as graphql-js's parser does, comments aside", () => {
    const query = '{ a b } # a comment of many words\n';
    expect(() => parse(query, { maxTokens: 4 })).not.toThrow();
    expect(() => parse(query, { maxTokens: 3 })).toThrow(/more tha[nt] 3 tokens/);
    expect(hasMoreTokens(query, 4)).toBe(false);
    expect(hasMoreTokens(query, 3)).toBe(true);
  });
});

describe(documentRulesPlugin.name, () => {
  it("leaves an operation of the host's fields alone, however many aliases or tokens", async () => {
    expect(await refusalOf(`{ ${aliases(6, 'hello')} }`)).toBeUndefined();
    expect(await refusalOf(`{ ${aliases(40, 'hello')} }`)).toBeUndefined();
    // Meta fields are nobody's: the operation is still the host's.
    expect(await refusalOf(`{ hello ${aliases(40, '__typename')} }`)).toBeUndefined();
  });

  it("refuses too many aliases in an operation with Scribe's fields, the host's counted", async () => {
    expect(await refusalOf(`{ session ${aliases(5, 'hello')} }`)).toBeUndefined();
    expect(await refusalOf(`{ session ${aliases(6, 'hello')} }`)).toMatch(/Aliases limit of 5/);
    expect(await refusalOf(`{ ${aliases(6, 'session')} }`)).toMatch(/Aliases limit of 5/);
  });

  it("refuses too many tokens in an operation with Scribe's fields", async () => {
    const many = `{ session ${Array.from({ length: 100 }, () => 'hello').join(' ')} }`;
    expect(await refusalOf(many)).toBe(
      'Query document has more than 100 tokens (MAX_QUERY_TOKENS)',
    );
  });

  it('judges the operation that runs, not the others of its document', async () => {
    const query = `query Host { ${aliases(6, 'hello')} } query Mine { session }`;
    expect(await refusalOf(query, 'Mine')).toBeUndefined();
    expect(await refusalOf(query, 'Host')).toBeUndefined();
  });
});
