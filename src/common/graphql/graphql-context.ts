import { type Request } from 'express';

/** What each resolver receives as GraphQL context. */
export interface GraphQLContext {
  req: Request;
}
