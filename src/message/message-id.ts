import { v5 as uuidV5 } from 'uuid';
import { TimeOrderedIds } from './time-ordered-ids.js';

// The UUID namespace of Scribe's message ids (itself a random v4, fixed forever).
const MESSAGE_ID_NAMESPACE = '6f0f3c52-4a7d-4c38-9a8e-3c1d2b7e5a90';

const timeOrdered = new TimeOrderedIds();

/**
 * The id a message gets when accepted. With a client id it is derived from the session and
 * that id (a name-based UUID, v5): every acceptance of one client message, on any instance, in
 * any state of the database, gets the same id, so two instances racing one retry during an
 * outage end with one message, and each client holds its id. Without one it is time-ordered
 * (v7: milliseconds, then random bits): ids issued one after another sort together, so their
 * rows land at one end of the id index instead of on a random page each. On SQLite in FULL
 * sync, a commit of random ids writes about a page of the index per row; that made batch
 * appends about three times slower (npm run bench).
 */
export function messageIdFor(
  sessionId: string,
  clientMessageId: string | null | undefined,
): string {
  if (clientMessageId === null || clientMessageId === undefined) return timeOrdered.next();
  // JSON keeps the two parts apart whatever characters they hold.
  return uuidV5(JSON.stringify([sessionId, clientMessageId]), MESSAGE_ID_NAMESPACE);
}
