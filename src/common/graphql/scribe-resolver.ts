import { UseFilters, UseGuards, UseInterceptors, UsePipes, applyDecorators } from '@nestjs/common';
import { Resolver } from '@nestjs/graphql';
import { NonReaderRefusalsInterceptor } from '../auth/non-reader-refusals.interceptor.js';
import { ScopeGuard } from '../auth/scope.guard.js';
import { GraphQLExceptionFilter } from '../errors/graphql-exception.filter.js';
import { ScribeValidationPipe } from '../validation/validation.pipe.js';

/** What `@Resolver(() => X)` takes: the object type whose fields the class resolves. */
type ResolvedType = () => NonNullable<unknown>;

/**
 * A resolver of Scribe's: its scope guard, what a caller without `read` is told, its
 * validation pipe and its exception filter, on this class only. They are not global (APP_*):
 * a host that imports Scribe's module keeps its own resolvers and controllers as they were.
 * Field resolvers get the pipe as before; guards, interceptors and filters reach them only if
 * GraphQLModule's `fieldResolverEnhancers` asks, as it did not when these were global.
 */
export const ScribeResolver = (of?: ResolvedType) =>
  applyDecorators(
    of ? Resolver(of) : Resolver(),
    UseGuards(ScopeGuard),
    UseInterceptors(NonReaderRefusalsInterceptor),
    UsePipes(ScribeValidationPipe),
    UseFilters(GraphQLExceptionFilter),
  );
