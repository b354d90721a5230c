import { IsInt, IsOptional, IsString, Max, Min } from 'class-validator';
import { LiveSettings } from './live-settings.js';

/** The variables of HttpSettings that are whole numbers, read from plain decimal digits. */
export const HTTP_INTEGERS = [
  'MAX_REFUSALS_PER_MINUTE',
  'HEADERS_TIMEOUT_MS',
  'BODY_TIMEOUT_MS',
  'BODY_MIN_BYTES_PER_SECOND',
  'KEEP_ALIVE_TIMEOUT_MS',
] as const;

/** The HTTP server's refusals, deadlines, and what stands in front of it. */
export class HttpSettings extends LiveSettings {
  /**
   * Refused requests (HTTP 4xx) one source address may cause per minute, in bursts of as
   * many; past that its requests are answered 429 RATE_LIMITED unread. 0 turns it off.
   */
  @IsInt()
  @Min(0)
  @Max(1_000_000)
  MAX_REFUSALS_PER_MINUTE = 60;

  /** The longest a request's head (request line and headers) may take to arrive; 408 past it. */
  @IsInt()
  @Min(100)
  @Max(600_000)
  HEADERS_TIMEOUT_MS = 10_000;

  /**
   * A request body's deadline, with BODY_MIN_BYTES_PER_SECOND: it must have arrived within this
   * much plus one second per BODY_MIN_BYTES_PER_SECOND bytes received; 408 past it.
   */
  @IsInt()
  @Min(100)
  @Max(600_000)
  BODY_TIMEOUT_MS = 10_000;

  /** The slowest a body may arrive, past BODY_TIMEOUT_MS (see there). */
  @IsInt()
  @Min(1024)
  @Max(1024 * 1024 * 1024)
  BODY_MIN_BYTES_PER_SECOND = 64 * 1024;

  /** How long an idle keep-alive connection stays open between requests. */
  @IsInt()
  @Min(100)
  @Max(600_000)
  KEEP_ALIVE_TIMEOUT_MS = 5000;

  /**
   * Express's `trust proxy`: how many proxies (a number) or which (addresses, subnets,
   * `loopback`, comma-separated) stand in front, so that the source address is the client's.
   */
  @IsOptional()
  @IsString()
  TRUST_PROXY?: string;

  /** Origins browsers may call Scribe from, comma-separated (`https://chat.example.com`). */
  @IsOptional()
  @IsString()
  CORS_ORIGINS?: string;

  /** Request headers a preflight allows beyond Scribe's own, comma-separated (`x-trace-id`). */
  @IsOptional()
  @IsString()
  CORS_ALLOWED_HEADERS?: string;
}
