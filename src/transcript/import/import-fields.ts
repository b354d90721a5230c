import { ScribeException } from '../../common/errors/scribe.exception.js';
import { textProblem } from '../../common/validation/storable-values.js';

// Readers of the fields of an import's line, each refusing with BAD_USER_INPUT naming it.

// RFC 3339 as Date's toJSON writes it (and with an offset, or fewer fraction digits).
const TIME =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.\d{1,3})?(?:Z|[+-](?:[01]\d|2[0-3]):[0-5]\d)$/;

export function text(body: Record<string, unknown>, key: string, at: string): string {
  const value = body[key];
  if (typeof value !== 'string')
    throw ScribeException.invalidInput(`${at}.${key}`, 'must be a string');
  const problem = textProblem(value);
  if (problem) throw ScribeException.invalidInput(`${at}.${key}`, problem);
  return value;
}

export function nullableText(
  body: Record<string, unknown>,
  key: string,
  at: string,
): string | null {
  return body[key] === undefined || body[key] === null ? null : text(body, key, at);
}

export function count(body: Record<string, unknown>, key: string, at: string): number {
  const value = body[key];
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw ScribeException.invalidInput(`${at}.${key}`, 'must be a whole number, 0 or more');
  }
  return value;
}

/** A time as an export writes it (an ISO 8601 date and time), as epoch milliseconds. */
export function timeOf(body: Record<string, unknown>, key: string, at: string): number {
  const value = body[key];
  const parts = typeof value === 'string' ? TIME.exec(value) : null;
  const ms = parts && isCalendarTime(parts) ? Date.parse(value as string) : Number.NaN;
  if (!Number.isSafeInteger(ms) || ms < 0) {
    throw ScribeException.invalidInput(
      `${at}.${key}`,
      'must be a date and time in ISO 8601 (as 2026-12-02T18:45:28.000Z), from 1970 on',
    );
  }
  return ms;
}

/**
 * Whether a matched time names a real day and time of day: Date.parse takes 2026-02-30 as
 * March 2nd and 24:00 as the next day, which an export never writes and would not round-trip.
 */
function isCalendarTime(parts: RegExpExecArray): boolean {
  const [year, month, day, hour, minute, second] = parts.slice(1, 7).map(Number);
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  return (
    month >= 1 &&
    month <= 12 &&
    day >= 1 &&
    day <= daysInMonth &&
    hour < 24 &&
    minute < 60 &&
    second < 60
  );
}
