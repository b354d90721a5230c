import {
  type ApolloServerOptions,
  type ApolloServerPlugin,
  type BaseContext,
} from '@apollo/server';
import { ApolloArmor } from '@escape.tech/graphql-armor';
import { type GraphQLArmorRejectCallback } from '@escape.tech/graphql-armor-types';
import { type QueryLimitSettings } from '../../config/scribe-config.js';
import { queryTooComplexError } from './query-limits.js';
import { documentRulesPlugin } from './document-rules.plugin.js';
import { queryLimitsPlugin, type BoundedOperations } from './query-limits.plugin.js';
import { repeatedFieldsRule } from './repeated-fields.rule.js';

// Directives one operation may carry (@include/@skip on a few fields; no schema defines more).
const MAX_DIRECTIVES = 50;

/** An Armor rule's refusal, reported as Scribe's QUERY_TOO_COMPLEX instead of a syntax error. */
const refuseAsTooComplex: GraphQLArmorRejectCallback = (context, error) =>
  context?.reportError(queryTooComplexError(error.message.replace(/^Syntax Error: /, '')));

/**
 * Every bound on a GraphQL document, from the cheapest check to the dearest: its token count
 * while it is parsed (graphql-js stops the parser past `maxTokens`), aliases and directives
 * while it is validated (GraphQL Armor), a field repeated under several aliases (Scribe's),
 * then depth, messages and full reads before it runs
 * (Scribe's own cost model). Its size in bytes is checked before any of this, by the HTTP layer.
 * On a host's endpoint (`bounded` 'scribe') the same bounds apply to the operations that
 * select Scribe's fields only, all of them once the operation is known (documentRulesPlugin):
 * no parse option and no validation rule then, which would judge every document.
 */
export function queryProtection(
  limits: QueryLimitSettings,
  bounded: BoundedOperations = 'every',
): Required<
  Pick<ApolloServerOptions<BaseContext>, 'plugins' | 'validationRules' | 'parseOptions'>
> {
  const armor = new ApolloArmor({
    // Suggestions are left out by formatGraphQLError, enum values' included.
    blockFieldSuggestion: { enabled: false },
    maxAliases: {
      n: limits.maxAliases,
      propagateOnRejection: false,
      onReject: [refuseAsTooComplex],
    },
    maxDirectives: {
      n: MAX_DIRECTIVES,
      propagateOnRejection: false,
      onReject: [refuseAsTooComplex],
    },
    // Scribe's own: its depth rule walks each fragment once, and its cost model knows what a
    // read of messages costs; graphql-js bounds the tokens.
    maxDepth: { enabled: false },
    costLimit: { enabled: false },
    maxTokens: { enabled: false },
  }).protect();
  const rules = [...armor.validationRules, repeatedFieldsRule];
  // Armor's typings name Apollo's CommonJS build; the plugins are the same objects.
  const armorPlugins = armor.plugins as unknown as ApolloServerPlugin[];
  if (bounded === 'scribe') {
    return {
      parseOptions: {},
      validationRules: [],
      plugins: [
        ...armorPlugins,
        documentRulesPlugin(limits.maxTokens, rules),
        queryLimitsPlugin(limits.maxFullReads, 'scribe'),
      ],
    };
  }
  return {
    parseOptions: { maxTokens: limits.maxTokens },
    validationRules: rules,
    plugins: [...armorPlugins, queryLimitsPlugin(limits.maxFullReads)],
  };
}
