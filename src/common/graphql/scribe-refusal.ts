import { GraphQLError } from 'graphql';

/**
 * A refusal Scribe raises itself as a GraphQLError (a bound on a document, an input list too
 * long, a subscription sent over HTTP), as against one graphql-js or Apollo raises. Its own
 * class, so that on a host's endpoint ('host' mode) it is told apart from the host's errors
 * and formatted as Scribe formats its own (no stack trace), whatever the host's formatting.
 */
export class ScribeRefusal extends GraphQLError {}

/** Whether `error` is a ScribeRefusal, or Apollo's wrapping of one (a validation rule's). */
export function isScribeRefusal(error: unknown): boolean {
  if (error instanceof ScribeRefusal) return true;
  const original = (error as { originalError?: unknown } | undefined)?.originalError;
  return original instanceof ScribeRefusal;
}
