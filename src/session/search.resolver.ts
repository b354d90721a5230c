import { Args, Context, Query } from '@nestjs/graphql';
import { OWN_SESSIONS, RequireScope, callerSessionPrefix } from '../common/auth/scope.guard.js';
import { ScribeErrorCode } from '../common/errors/scribe-error-code.js';
import { ScribeException } from '../common/errors/scribe.exception.js';
import { type GraphQLContext } from '../common/graphql/graphql-context.js';
import { messageCursor, toMessageModel } from '../common/graphql/message.mapper.js';
import { ScribeResolver } from '../common/graphql/scribe-resolver.js';
import { decodeCursor, encodeCursor } from '../common/pagination/cursor.js';
import { ScribeConfig } from '../config/scribe-config.js';
import { fromDatabase } from '../database/database-errors.js';
import { MessageSearch } from '../database/message-search.js';
import { AppendStatus } from '../message/append-status.js';
import { SearchMessagesArgs } from './dto/search-messages.args.js';
import { MessageMatchConnection, type MessageMatchPage } from './models/message-match.model.js';
import { parseSearchQuery } from './search-query.js';
import { snippetOf } from './search-snippet.js';

/** How deep a search pages: past this many matches, a narrower query is the way on. */
export const MAX_SEARCH_DEPTH = 10_000;
const CURSOR = /^match:(\d{1,5})$/;

/**
 * `searchMessages`: full-text search over stored messages, best first, within what the caller
 * may read (one session, or the sessions its token's prefix allows, or all). Messages this
 * instance still holds (QUEUED, BUFFERED) are found once they are stored.
 */
@ScribeResolver()
export class SearchResolver {
  constructor(
    private readonly search: MessageSearch,
    private readonly config: ScribeConfig,
  ) {}

  @Query(() => MessageMatchConnection, {
    description:
      'Stored messages whose content matches `query`, best first, as a Relay connection: in one session with `sessionId`, else in every session the caller may read (a token limited to a session prefix searches its own). Messages this instance still holds (QUEUED, BUFFERED) are found once stored. A page ends early, with `hasNextPage`, once its messages reach MAX_PAGE_BYTES; matches past the 10,000th are not paged to: narrow the query.',
  })
  @RequireScope('read', OWN_SESSIONS)
  async searchMessages(
    @Args() args: SearchMessagesArgs,
    @Context() context: GraphQLContext,
  ): Promise<MessageMatchPage> {
    const prefix = callerSessionPrefix(context);
    const sessionId = args.sessionId ?? undefined;
    if (prefix !== undefined && sessionId !== undefined && !sessionId.startsWith(prefix)) {
      throw new ScribeException(
        ScribeErrorCode.Forbidden,
        `searchMessages: this caller may only reach sessions whose id starts with "${prefix}"`,
      );
    }
    const query = parseSearchQuery(args.query);
    const offset = args.after ? searchOffsetOf(args.after) + 1 : 0;
    const budget = context.budget;
    const page = await fromDatabase(
      this.search.search(
        {
          expression: query.expression,
          ...(sessionId !== undefined ? { sessionId } : {}),
          ...(prefix !== undefined ? { idPrefix: prefix } : {}),
          offset,
          first: Math.min(args.first, MAX_SEARCH_DEPTH - offset),
          maxBytes: this.config.maxPageBytes,
        },
        budget && ((bytes) => budget.admit(bytes)),
      ),
    );
    const edges = page.items.map((record, index) => ({
      cursor: encodeCursor(`match:${offset + index}`),
      node: {
        sessionId: record.sessionId,
        message: toMessageModel(record, AppendStatus.PERSISTED),
        snippet: snippetOf(record.content, query.terms),
        messageCursor: messageCursor(record),
      },
    }));
    return {
      edges,
      pageInfo: {
        hasNextPage: page.more && offset + edges.length < MAX_SEARCH_DEPTH,
        hasPreviousPage: offset > 0,
        startCursor: edges[0]?.cursor ?? null,
        endCursor: edges.at(-1)?.cursor ?? null,
      },
    };
  }
}

/** The place in a search an `after` cursor names; BAD_USER_INPUT for anything else. */
export function searchOffsetOf(cursor: string): number {
  const match = CURSOR.exec(decodeCursor(cursor));
  const offset = match ? Number(match[1]) : Number.NaN;
  if (!(offset < MAX_SEARCH_DEPTH - 1)) {
    throw ScribeException.invalidInput('after', 'is not a cursor of this search');
  }
  return offset;
}
