import { ScribeException } from '../errors/scribe.exception.js';

const PREFIX = 'scribe:v1:';

/** Opaque cursor: the base64url of a versioned key, so clients cannot rely on its shape. */
export function encodeCursor(key: string): string {
  return Buffer.from(PREFIX + key, 'utf8').toString('base64url');
}

/** Reverses {@link encodeCursor}; anything else is a BAD_USER_INPUT naming `field`. */
export function decodeCursor(cursor: string, field = 'after'): string {
  const decoded = /^[A-Za-z0-9_-]+$/.test(cursor)
    ? Buffer.from(cursor, 'base64url').toString('utf8')
    : '';
  if (!decoded.startsWith(PREFIX) || decoded.length === PREFIX.length) {
    throw ScribeException.invalidInput(field, 'is not a cursor returned by this API');
  }
  return decoded.slice(PREFIX.length);
}
