import { type ArgumentsHost, Catch } from '@nestjs/common';
import { BaseExceptionFilter } from '@nestjs/core';
import { type GqlContextType } from '@nestjs/graphql';

/**
 * Hands a resolver's exception to GraphQL untouched. Nest would otherwise log every one at
 * ERROR with its stack, a client's bad input included; errorLogPlugin logs each by its kind.
 * HTTP routes (health, metrics) keep Nest's own handling.
 */
@Catch()
export class GraphQLExceptionFilter extends BaseExceptionFilter {
  override catch(exception: unknown, host: ArgumentsHost): unknown {
    if (host.getType<GqlContextType>() === 'graphql') return exception;
    super.catch(exception, host);
    return undefined;
  }
}
