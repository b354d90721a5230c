import { type Request } from 'express';
import { type ResponseBudget } from './response-budget.js';

/** What each resolver receives as GraphQL context. */
export interface GraphQLContext {
  req: Request;
  /** The request's id, in its logs and the `x-request-id` header of its answer (HTTP only). */
  requestId?: string;
  /** What the answer may still take (HTTP only: a subscription's events are one message each). */
  budget?: ResponseBudget;
}
