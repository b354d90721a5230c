import { IsInt, IsOptional, Max, Min } from 'class-validator';
import { StoreSettings } from './store-settings.js';

/** Room left in a request body for the query text and the other fields of a message. */
export const BODY_ROOM_BYTES = 64 * 1024;

/** The variables of ReadLimitSettings that are whole numbers, read from plain decimal digits. */
export const READ_LIMIT_INTEGERS = [
  'SESSION_RESOLVE_CONCURRENCY',
  'SESSION_RESOLVE_TIMEOUT_MS',
  'SESSION_CACHE_SIZE',
  'SESSION_CACHE_MAX_BYTES',
  'MAX_PAGE_BYTES',
  'MAX_RESPONSE_BYTES',
  'MAX_LARGE_RESPONSES',
  'MAX_MESSAGE_BYTES',
  'MAX_BODY_BYTES',
  'MAX_QUERY_BYTES',
  'MAX_QUERY_TOKENS',
  'MAX_QUERY_ALIASES',
  'MAX_FULL_READS_PER_REQUEST',
] as const;

/**
 * Bounds on reading sessions and on one request: the session cache, page and answer sizes, the
 * message and body sizes, and the query's text.
 */
export class ReadLimitSettings extends StoreSettings {
  @IsInt()
  @Min(1)
  @Max(64)
  SESSION_RESOLVE_CONCURRENCY = 2;

  @IsInt()
  @Min(1)
  @Max(600_000)
  SESSION_RESOLVE_TIMEOUT_MS = 10_000;

  @IsInt()
  @Min(0)
  @Max(1_000_000)
  SESSION_CACHE_SIZE = 100;

  /** Estimated bytes of all cached transcripts; a session larger than this is read by pages. */
  @IsInt()
  @Min(1024 * 1024)
  @Max(64 * 1024 * 1024 * 1024)
  SESSION_CACHE_MAX_BYTES = 64 * 1024 * 1024;

  /**
   * Estimated bytes (as SESSION_CACHE_MAX_BYTES counts them) of one page of messages: past it a
   * page ends early, with hasNextPage, however small its `first`.
   */
  @IsInt()
  @Min(64 * 1024)
  @Max(1024 * 1024 * 1024)
  MAX_PAGE_BYTES = 8 * 1024 * 1024;

  /**
   * The largest answer (serialised JSON, estimated from stored sizes) one request may get;
   * unset: the larger of 4 × MAX_PAGE_BYTES and what one mutation and one page can answer.
   */
  @IsOptional()
  @IsInt()
  @Min(64 * 1024)
  @Max(256 * 1024 * 1024)
  MAX_RESPONSE_BYTES?: number;

  /** Requests whose answer grows past MAX_PAGE_BYTES that may be built at once; more wait. */
  @IsInt()
  @Min(1)
  @Max(64)
  MAX_LARGE_RESPONSES = 2;

  @IsInt()
  @Min(1)
  @Max(256 * 1024 * 1024)
  MAX_MESSAGE_BYTES = 1024 * 1024;

  @IsInt()
  @Min(1)
  @Max(1024 * 1024 * 1024)
  MAX_BODY_BYTES = 16 * 1024 * 1024;

  /** The longest GraphQL document (query text) accepted, checked before it is parsed. */
  @IsInt()
  @Min(256)
  @Max(16 * 1024 * 1024)
  MAX_QUERY_BYTES = 64 * 1024;

  /** The most lexical tokens a document may hold; the parser stops past it. */
  @IsInt()
  @Min(200)
  @Max(1_000_000)
  MAX_QUERY_TOKENS = 1000;

  /** The most aliased fields an operation may hold. */
  @IsInt()
  @Min(0)
  @Max(100_000)
  MAX_QUERY_ALIASES = 30;

  /** The most session transcripts (`messages` selections) one request may read. */
  @IsInt()
  @Min(1)
  @Max(100_000)
  MAX_FULL_READS_PER_REQUEST = 10;
}

/**
 * The smallest MAX_RESPONSE_BYTES allowed: what one mutation can echo of its body, one page and
 * one item past it, so that an honest request is never refused for its size alone.
 */
export function leastResponseBytes(environment: ReadLimitSettings): number {
  return environment.MAX_BODY_BYTES + environment.MAX_PAGE_BYTES + environment.MAX_MESSAGE_BYTES;
}

/** MAX_RESPONSE_BYTES, or its default: a few pages, never less than leastResponseBytes. */
export function maxResponseBytesOf(environment: ReadLimitSettings): number {
  return (
    environment.MAX_RESPONSE_BYTES ??
    Math.max(4 * environment.MAX_PAGE_BYTES, leastResponseBytes(environment))
  );
}
