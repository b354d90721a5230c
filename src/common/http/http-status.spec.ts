import { ScribeErrorCode } from '../errors/scribe-error-code.js';
import { httpStatusFor } from './http-refusal.js';

describe('httpStatusFor', () => {
  it.each([
    [ScribeErrorCode.BadUserInput, 400],
    [ScribeErrorCode.Unauthenticated, 401],
    [ScribeErrorCode.Forbidden, 403],
    [ScribeErrorCode.NotFound, 404],
    [ScribeErrorCode.IdempotencyConflict, 409],
    [ScribeErrorCode.MessageRefused, 422],
    [ScribeErrorCode.DatabaseUnavailable, 503],
    [ScribeErrorCode.JournalUnavailable, 503],
    [ScribeErrorCode.ServiceUnavailable, 503],
    [ScribeErrorCode.SlowConsumer, 500],
  ])('answers %s with %i', (code, status) => {
    expect(httpStatusFor(code)).toBe(status);
  });
});
