import { type ApolloServerPlugin } from '@apollo/server';
import {
  Lexer,
  Source,
  TokenKind,
  validate,
  type DocumentNode,
  type GraphQLError,
  type OperationDefinitionNode,
  type ValidationRule,
} from 'graphql';
import { queryTooComplexError } from './query-limits.js';
import { operationAlone, scribePart } from './scribe-fields.js';

/** Whether `query` has more than `max` tokens, counted as graphql-js's parser counts them. */
export function hasMoreTokens(query: string, max: number): boolean {
  const lexer = new Lexer(new Source(query));
  let tokens = 0;
  // advance() steps over comments, as the parser's count does.
  while (lexer.advance().kind !== TokenKind.EOF) {
    if (++tokens > max) return true;
  }
  return false;
}

/**
 * 'host' mode: Scribe's document rules (its token count, then the validation rules that bound
 * aliases, directives and repeated fields) for the operations that select Scribe's fields,
 * once the operation is known. Why not where Scribe's own endpoint checks them (the parser's
 * `maxTokens`, Apollo's `validationRules`): those judge every document before anyone knows
 * which operation runs, and on a host's endpoint an operation of the host's fields only is
 * the host's to bound (a hundred aliases of its own `hello` are none of Scribe's business).
 * An operation with Scribe's fields is judged whole, the host's fields in it included: it
 * runs as one, and Scribe's resolvers share its time and its answer. Its parse is bounded
 * meanwhile by the query's bytes (MAX_QUERY_BYTES, checked on every body on the path) and by
 * the host's own parseOptions. The verdicts are kept per parsed document (Apollo hands the
 * same one to every request with the same text); the rules read no variable.
 */
export function documentRulesPlugin(
  maxTokens: number,
  rules: readonly ValidationRule[],
): ApolloServerPlugin {
  const overTokens = new WeakMap<DocumentNode, boolean>();
  const verdicts = new WeakMap<OperationDefinitionNode, readonly GraphQLError[]>();
  return {
    requestDidStart: () =>
      Promise.resolve({
        didResolveOperation: ({ schema, document, operation, source }) => {
          if (!operation || !scribePart(schema, document, operation)) return Promise.resolve();
          let over = overTokens.get(document);
          if (over === undefined) {
            over = hasMoreTokens(source, maxTokens);
            overTokens.set(document, over);
          }
          if (over) {
            return Promise.reject(
              queryTooComplexError(
                `Query document has more than ${maxTokens} tokens (MAX_QUERY_TOKENS)`,
              ),
            );
          }
          let errors = verdicts.get(operation);
          if (!errors) {
            errors = validate(schema, operationAlone(document, operation), rules);
            verdicts.set(operation, errors);
          }
          return errors.length > 0 ? Promise.reject(errors[0]) : Promise.resolve();
        },
      }),
  };
}
