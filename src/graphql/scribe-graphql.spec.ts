import { jest } from '@jest/globals';
import { type ApolloServerPlugin } from '@apollo/server';
import { ApolloServerErrorCode } from '@apollo/server/errors';
import { type ApolloDriverConfig } from '@nestjs/apollo';
import { type Request } from 'express';
import { buildSchema, GraphQLError, type GraphQLFormattedError } from 'graphql';
import { AuthFailureLog } from '../common/auth/auth-failure-log.js';
import { Authenticator } from '../common/auth/authenticator.js';
import { ScribeErrorCode } from '../common/errors/scribe-error-code.js';
import { ScribeException } from '../common/errors/scribe.exception.js';
import { queryTooComplexError } from '../common/graphql/query-limits.js';
import { ServedSchema } from '../common/graphql/served-schema.js';
import { resolveScribeConfig } from '../config/resolve-scribe-config.js';
import { type ScribeOptions } from '../config/scribe-options.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { ScribeGraphQL } from './scribe-graphql.js';

function scribeGraphQL(options: ScribeOptions = {}) {
  const config = resolveScribeConfig(options);
  const served = new ServedSchema();
  const graphql = new ScribeGraphQL(
    config,
    new AuthFailureLog(),
    new Authenticator(config),
    served,
    new MetricsService(),
  );
  return { graphql, served };
}

/** A request as Express hands one to Apollo's context function. */
function request(id = 'req-1') {
  const setHeader = jest.fn();
  const req = {
    headers: { 'x-request-id': id },
    res: { setHeader, once: jest.fn(), writableFinished: false },
  } as unknown as Request;
  return { req, setHeader };
}

type Context = (ctx: { req: Request }) => Promise<Record<string, unknown>>;
type Format = (formatted: GraphQLFormattedError, error: unknown) => GraphQLFormattedError;

const scribeError = () =>
  new GraphQLError('no', {
    originalError: new ScribeException(ScribeErrorCode.Forbidden, 'no'),
  });

describe(ScribeGraphQL.name, () => {
  describe('forHost', () => {
    it("serves Scribe's graphql.path, with a schema built from the resolvers by default", () => {
      const { graphql } = scribeGraphQL();
      expect(graphql.forHost()).toMatchObject({
        path: '/graphql',
        autoSchemaFile: true,
        sortSchema: true,
      });
      expect(scribeGraphQL({ graphql: { path: '/api' } }).graphql.forHost().path).toBe('/api');
    });

    it("refuses a host path that is not Scribe's, naming both", () => {
      const { graphql } = scribeGraphQL({ graphql: { path: '/api' } });
      expect(() => graphql.forHost({ path: '/graphql' })).toThrow(
        "Scribe's graphql.path is /api but the host's GraphQLModule serves /graphql: give Scribe the host's path",
      );
      expect(graphql.forHost({ path: '/api' }).path).toBe('/api');
    });

    it("keeps the host's other options, its schema settings included", () => {
      const { graphql } = scribeGraphQL();
      const config = graphql.forHost({
        autoSchemaFile: 'host.gql',
        sortSchema: false,
        introspection: true,
      });
      expect(config).toMatchObject({
        autoSchemaFile: 'host.gql',
        sortSchema: false,
        introspection: true,
      });
    });

    it("runs Scribe's plugins first, the host's after, in their order", async () => {
      const { graphql, served } = scribeGraphQL();
      const first: ApolloServerPlugin = {};
      const second: ApolloServerPlugin = {};
      const plugins = graphql.forHost({ plugins: [first, second] }).plugins ?? [];
      // Scribe's, their request hooks in one listener (combinedPlugins), then the host's.
      expect(plugins.slice(-2)).toEqual([first, second]);
      expect(plugins[plugins.length - 2]).toBe(first);
      expect(plugins[plugins.length - 1]).toBe(second);
      const requests = plugins.filter((plugin) => 'requestDidStart' in plugin);
      expect(requests).toHaveLength(1);
      expect(plugins.indexOf(requests[0])).toBe(plugins.length - 3);

      // The first records the schema the host's server starts with (ServedSchema).
      const schema = buildSchema('type Query { a: Int }');
      await (plugins[0] as ApolloServerPlugin).serverWillStart?.({ schema } as never);
      expect(served.schema).toBe(schema);
      expect(graphql.forHost().plugins).toHaveLength(plugins.length - 2);
    });

    it("adds no validation rule to the host's: Scribe's bound Scribe's operations only", () => {
      const { graphql } = scribeGraphQL();
      // Scribe's own endpoint checks them while validating every document.
      expect(graphql.queryProtection().validationRules?.length).toBeGreaterThan(0);
      const hostRule = () => ({});
      const rules = graphql.forHost({ validationRules: [hostRule] }).validationRules ?? [];
      expect(rules).toEqual([hostRule]);
      expect(graphql.forHost().validationRules).toEqual([]);
    });

    it("bounds every document's tokens by Scribe's limit, unless the host gives its own", () => {
      const { graphql } = scribeGraphQL({ limits: { maxQueryTokens: 1234 } });
      expect(graphql.queryProtection().parseOptions).toEqual({ maxTokens: 1234 });
      expect(graphql.forHost().parseOptions).toEqual({ maxTokens: 1234 });
      expect(graphql.forHost({ parseOptions: { noLocation: true } }).parseOptions).toEqual({
        noLocation: true,
        maxTokens: 1234,
      });
      expect(graphql.forHost({ parseOptions: { maxTokens: 9 } }).parseOptions).toEqual({
        maxTokens: 9,
      });
      expect(graphql.forHost({ parseOptions: { maxTokens: 50_000 } }).parseOptions).toEqual({
        maxTokens: 50_000,
      });
    });

    it('refuses useGlobalPrefix, telling the host to give the full path instead', () => {
      const { graphql } = scribeGraphQL();
      expect(() => graphql.forHost({ useGlobalPrefix: true })).toThrow(
        /useGlobalPrefix.*full path.*graphql\.path/,
      );
      expect(graphql.forHost({ useGlobalPrefix: false }).path).toBe('/graphql');
    });

    it("refuses subscriptions: Scribe's WebSocket server serves them on the path", () => {
      const { graphql } = scribeGraphQL();
      expect(() => graphql.forHost({ subscriptions: { 'graphql-ws': true } })).toThrow(
        /^Scribe serves subscriptions .*: leave `subscriptions` out of forHost's options$/,
      );
      expect(() => graphql.forHost({ subscriptions: {} })).toThrow(/`subscriptions`/);
    });

    it("keeps the host's stringifyResult, else writes answers as Scribe does", async () => {
      const { graphql } = scribeGraphQL();
      const hostStringify = () => 'host';
      expect(graphql.forHost({ stringifyResult: hostStringify }).stringifyResult).toBe(
        hostStringify,
      );
      const own = graphql.forHost().stringifyResult;
      expect(typeof own).toBe('function');
      expect(await own?.({ data: { a: 1 } })).toBe(`${JSON.stringify({ data: { a: 1 } })}\n`);
    });

    describe('formatError', () => {
      const formatted: GraphQLFormattedError = { message: 'no' };

      it("formats an error a Scribe resolver raised as Scribe does, not the host's way", () => {
        const { graphql } = scribeGraphQL();
        const hostFormat = jest.fn<Format>(() => ({ message: 'host' }));
        const format = graphql.forHost({ formatError: hostFormat }).formatError as Format;
        const error = scribeError();
        const own = graphql.formatError(formatted, error);
        expect(own.extensions?.code).toBe(ScribeErrorCode.Forbidden);
        expect(format(formatted, error)).toEqual(own);
        expect(hostFormat).not.toHaveBeenCalled();
      });

      it("formats Scribe's own refusals (ScribeRefusal) and its token limit as Scribe does", () => {
        const { graphql } = scribeGraphQL();
        const hostFormat = jest.fn<Format>(() => ({ message: 'host' }));
        const format = graphql.forHost({ formatError: hostFormat }).formatError as Format;
        const stack = (code: string) => ({
          message: 'too many',
          extensions: { code, stacktrace: ['at x'] },
        });
        const refusal = queryTooComplexError('too many');
        expect(format(stack(ScribeErrorCode.QueryTooComplex), refusal)).toEqual({
          message: 'too many',
          extensions: { code: ScribeErrorCode.QueryTooComplex },
        });
        // As Apollo wraps a validation rule's error.
        const wrapped = new GraphQLError('too many', { originalError: refusal });
        expect(
          format(stack(ApolloServerErrorCode.GRAPHQL_VALIDATION_FAILED), wrapped).extensions,
        ).toEqual({
          code: ScribeErrorCode.QueryTooComplex,
        });
        const tokens = {
          message: 'Syntax Error: Document contains more than 1000 tokens. Parsing aborted.',
          extensions: { code: ApolloServerErrorCode.GRAPHQL_PARSE_FAILED, stacktrace: ['at x'] },
        };
        const parse = new GraphQLError(tokens.message);
        expect(format(tokens, parse)).toEqual({
          message: 'Query document has more than 1000 tokens (MAX_QUERY_TOKENS)',
          extensions: { code: ScribeErrorCode.QueryTooComplex },
        });
        expect(hostFormat).not.toHaveBeenCalled();
        // The host's own token limit is the host's to answer.
        const own = graphql.forHost({ formatError: hostFormat, parseOptions: { maxTokens: 5 } });
        expect((own.formatError as Format)(tokens, parse)).toEqual({ message: 'host' });
      });

      it("leaves every other error to the host's formatError", () => {
        const { graphql } = scribeGraphQL();
        const hostFormat = jest.fn<Format>(() => ({ message: 'host' }));
        const format = graphql.forHost({ formatError: hostFormat }).formatError as Format;
        const error = new GraphQLError('boom', { originalError: new Error('boom') });
        expect(format(formatted, error)).toEqual({ message: 'host' });
        expect(hostFormat).toHaveBeenCalledWith(formatted, error);
      });

      it('leaves every other error as Apollo formatted it when the host has no formatError', () => {
        const { graphql } = scribeGraphQL();
        const format = graphql.forHost().formatError as Format;
        const error = new GraphQLError('boom', { originalError: new Error('boom') });
        expect(format(formatted, error)).toBe(formatted);
        expect(format(formatted, undefined)).toBe(formatted);
        expect(format(formatted, new Error('plain'))).toBe(formatted);
        // Scribe's own formatter would have hidden the message of a fault.
        expect(graphql.formatError(formatted, error)).not.toBe(formatted);
      });
    });

    describe('context', () => {
      const contextOf = (host?: ApolloDriverConfig['context']) =>
        scribeGraphQL().graphql.forHost(host === undefined ? {} : { context: host })
          .context as Context;

      it("holds Scribe's part alone when the host has no context", async () => {
        const { req, setHeader } = request('req-1');
        const context = await contextOf()({ req });
        expect(Object.keys(context).sort()).toEqual(['budget', 'req', 'requestId']);
        expect(context.req).toBe(req);
        expect(context.requestId).toBe('req-1');
        expect(setHeader).toHaveBeenCalledWith('x-request-id', 'req-1');
      });

      it("merges a host's context object beside Scribe's part", async () => {
        const { req } = request();
        const context = await contextOf({ tenant: 't1', requestId: 'host' })({ req });
        expect(context.tenant).toBe('t1');
        // Scribe's resolvers read their own keys: Scribe's part wins a clash.
        expect(context.requestId).toBe('req-1');
        expect(context.budget).toBeDefined();
      });

      it("merges what a host's context function returns, awaited, given Apollo's argument", async () => {
        const { req } = request();
        const host = jest.fn((ctx: { req: Request }) =>
          Promise.resolve({ user: 'u1', sawRequest: ctx.req === req, req: 'host' }),
        );
        const ctx = { req };
        const context = await contextOf(host)(ctx);
        expect(host).toHaveBeenCalledWith(ctx);
        expect(context).toMatchObject({ user: 'u1', sawRequest: true, requestId: 'req-1' });
        expect(context.req).toBe(req);
      });
    });
  });
});
