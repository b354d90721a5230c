import { type GraphQLContext } from '../common/graphql/graphql-context.js';
import { heldCursorKey, toMessageModel } from '../common/graphql/message.mapper.js';
import { type Message } from '../common/graphql/models/message.model.js';
import { pageConnection, type Connection } from '../common/pagination/connection.js';
import { type Page } from '../common/pagination/page-request.js';
import { AppendStatus } from '../message/append-status.js';
import { recordBytes } from '../message/session-record.js';
import { type ListedMessage } from './held-merge.js';

// A page of a session's messages as the API answers it: stored and held ones in their places,
// each with its cursor, and what building it costs the request's answer budget.

/** Charges the answer's budget for the listed messages a database page did not reserve. */
export async function chargeUnreserved(
  context: GraphQLContext,
  listed: Page<ListedMessage>,
  reserved: ReadonlySet<string>,
): Promise<void> {
  await context.budget?.admit(
    listed.items
      .filter((message) => !reserved.has(message.record.id))
      .reduce((sum, message) => sum + recordBytes(message.record), 0),
  );
}

/** The connection of a listed page: a held message's cursor says it is held. */
export function connectionOf(listed: Page<ListedMessage>, totalCount: number): Connection<Message> {
  return pageConnection(
    listed,
    totalCount,
    // A held message's cursor says so: a subscription after it must not take the commit
    // number it gets later as a place the client has seen everything before.
    (message) =>
      message.status === AppendStatus.PERSISTED
        ? message.record.orderKey
        : heldCursorKey(message.record.orderKey),
    (message) => toMessageModel(message.record, message.status),
  );
}
