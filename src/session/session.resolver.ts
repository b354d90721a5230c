import { Args, Context, Info, Parent, Query, ResolveField } from '@nestjs/graphql';
import { ScribeResolver } from '../common/graphql/scribe-resolver.js';
import { OWN_SESSIONS, RequireScope, callerSessionPrefix } from '../common/auth/scope.guard.js';
import { type GraphQLContext } from '../common/graphql/graphql-context.js';
import { requestAbortSignal } from '../common/http/request-abort-signal.js';
import { type GraphQLResolveInfo } from 'graphql';
import { pageConnection, type Connection } from '../common/pagination/connection.js';
import { sessionBytes } from '../message/session-record.js';
import { TwoWayPageArgs } from '../common/pagination/page.args.js';
import { type PageRequest } from '../common/pagination/page-request.js';
import { Message } from '../common/graphql/models/message.model.js';
import { type MessageRecord } from '../message/message-record.js';
import { type SessionRecord } from '../message/session-record.js';
import { SessionArgs } from './dto/session.args.js';
import { SessionsArgs, sessionFilterOf } from './dto/sessions.args.js';
import { ScribeConfig } from '../config/scribe-config.js';
import { GateStatus } from './models/gate-status.model.js';
import { MessageConnection } from '../common/graphql/models/message-connection.model.js';
import { Session, SessionConnection } from '../common/graphql/models/session.model.js';
import { chargeUnreserved, connectionOf } from './message-connection.js';
import { journalUnavailable, withHeld } from './held-merge.js';
import { SessionReader } from './session-reader.js';
import { checkMessagesArgs, messagePageRequest } from './message-page-args.js';
import { selectsField } from './selections.js';
import { createValidationPipe } from '../common/validation/validation.pipe.js';
import { decodeSessionCursor, sessionListKey } from './session-list-cursor.js';
import { toSessionModel } from '../common/graphql/session.mapper.js';

@ScribeResolver(() => Session)
export class SessionResolver {
  // Scribe's pipe's twin, for the arguments of `messages` checked before their field runs.
  private readonly pipe = createValidationPipe();

  constructor(
    private readonly reader: SessionReader,
    private readonly config: ScribeConfig,
  ) {}

  @Query(() => Session, {
    nullable: true,
    description: 'One session, or null when it does not exist.',
  })
  @RequireScope('read', 'id')
  async session(
    @Args() args: SessionArgs,
    @Info() info: GraphQLResolveInfo,
    @Context() context: GraphQLContext,
  ): Promise<Session | null> {
    await checkMessagesArgs(info, this.pipe);
    // Metadata is already in memory (cached or read) when it is charged: it is one value.
    const charge = (record: SessionRecord) => {
      if (selectsField(info, 'metadata') || selectsField(info, 'title')) {
        context.budget?.charge(sessionBytes(record));
      }
    };
    if (!selectsField(info, 'messages')) {
      const metadata = await this.reader.metadata(args.id);
      if (metadata) charge(metadata);
      return metadata ? toSessionModel(metadata) : this.onlyPending(args.id);
    }
    const held = this.reader.heldOf(args.id);
    const journaled = this.reader.inJournalOnly(args.id);
    // A client that hangs up stops waiting; the load itself goes on for the others.
    const full = await this.reader.full(args.id, requestAbortSignal(context.req), context.req);
    if (!full) return this.onlyPending(args.id);
    charge(full.session);
    // Too large to hold whole: its pages come straight from the database (keyset reads).
    return full.complete
      ? {
          ...toSessionModel(full.session),
          transcript: { messages: full.messages, held, journaled },
        }
      : toSessionModel(full.session);
  }

  @Query(() => SessionConnection, {
    description:
      "Sessions, most recently updated first; with `filter`, only those that match (`totalCount` counts those). A caller limited to a session prefix (a JWT's `session_prefix`) lists only its own sessions, and `totalCount` counts only those. A page ends early, with `hasNextPage`, once its titles and metadata reach MAX_PAGE_BYTES.",
  })
  @RequireScope('read', OWN_SESSIONS)
  async sessions(
    @Args() page: SessionsArgs,
    @Context() context: GraphQLContext,
  ): Promise<Connection<Session>> {
    const filter = sessionFilterOf(page.filter, callerSessionPrefix(context));
    const after = page.after ? decodeSessionCursor(page.after) : undefined;
    const budget = context.budget;
    const [listed, totalCount, hasPreviousPage] = await Promise.all([
      this.reader.list(page.first, after, filter, budget && ((bytes) => budget.admit(bytes))),
      this.reader.count(filter),
      after ? this.reader.anySessionAtOrBefore(after, filter) : false,
    ]);
    return pageConnection(
      { items: listed.sessions, hasNextPage: listed.more, hasPreviousPage },
      totalCount,
      sessionListKey,
      toSessionModel,
    );
  }

  @Query(() => GateStatus, {
    description:
      'Admin: full session loads and the session cache of this instance. Needs a token with the admin scope (ADMIN_TOKEN, or API_TOKENS or a JWT granting admin).',
  })
  @RequireScope('admin')
  gateStatus(): GateStatus {
    return this.reader.gateStatus();
  }

  @ResolveField(() => MessageConnection, {
    description:
      'The transcript, in the order its appends were accepted: `first` messages after `after` (from the oldest), or `last` messages before `before` (the newest when `before` is absent), in that order either way.',
  })
  async messages(
    @Parent() session: Session,
    @Args() args: TwoWayPageArgs,
    @Context() context: GraphQLContext,
  ): Promise<Connection<Message>> {
    const request = messagePageRequest(args);
    const loaded = session.transcript;
    // Read before the transcript was loaded (see LoadedTranscript), and before asking whether
    // the journal alone holds some: a message that leaves memory after this is in `held`.
    const held = loaded?.held ?? this.reader.heldOf(session.id);
    if (!loaded || loaded.journaled || this.reader.inJournalOnly(session.id)) {
      return this.fromDatabase(session.id, request, context);
    }
    const transcript = loaded.messages;
    const page = this.reader.transcriptPage(transcript, request);
    const listed = withHeld(page, request, held);
    // A cached transcript's page and held messages are in memory already: charged before the
    // answer is built.
    await chargeUnreserved(context, listed, new Set());
    // Stored since `held` was read, a held message is in the transcript too: counted there.
    const unstored = held.filter(({ record }) => !inTranscript(transcript, record)).length;
    return connectionOf(listed, session.messageCount + unstored);
  }

  /**
   * A page from the database (never a cached transcript, which may lack what the write-back
   * stored since), beside what this instance holds of the session in memory and, for the page,
   * in the journal only: the stored count and what is held are read at one moment (see
   * SessionReader.heldWithJournal), so that a message the write-back stores meanwhile is
   * counted once, and the page lists it from one or both.
   */
  private async fromDatabase(
    id: string,
    request: PageRequest<string>,
    context: GraphQLContext,
  ): Promise<Connection<Message>> {
    const budget = context.budget;
    const { held, journal, stored } = await this.reader.heldWithJournal(id, request);
    const page = await this.reader.messagePage(
      id,
      request,
      budget && ((bytes) => budget.admit(bytes)),
    );
    const listedHeld = [...held, ...journal.messages];
    const listed = withHeld(page, request, listedHeld, journal);
    await chargeUnreserved(context, listed, new Set(page.items.map((record) => record.id)));
    const unstored = new Set(listedHeld.map(({ record }) => record.id)).size;
    // Journal-only messages this page did not read back are accepted all the same.
    const unread = journal.total - journal.messages.length;
    return connectionOf(listed, stored + unstored + unread);
  }

  /** A session not stored yet, whose first messages this instance holds: it exists for them. */
  private async onlyPending(id: string): Promise<Session | null> {
    const held = this.reader.heldOf(id).map(({ record }) => record);
    // Its oldest (or all) may be in the journal only: one line read back tells when it began.
    const journal = this.reader.inJournalOnly(id)
      ? await this.reader.journalOnly(id, { direction: 'forward', count: 1 })
      : undefined;
    // Unread, neither when it began nor (with nothing held) that it exists is known.
    if (journal?.unreadable) throw journalUnavailable(journal.unreadable.damaged);
    const [oldest] = journal?.messages ?? [];
    const first = oldest?.record ?? held[0];
    if (!first) return null;
    const last = held.at(-1) ?? first;
    return {
      id,
      title: null,
      metadata: null,
      createdAt: new Date(first.acceptedAt),
      updatedAt: new Date(last.acceptedAt),
      messageCount: 0,
      revision: 0,
      // Nothing stored: its messages are all in what this instance holds.
      transcript: { messages: [] },
    };
  }
}

/** Whether `record` is in `transcript` (ordered by order key): found by its key, then its id. */
function inTranscript(transcript: readonly MessageRecord[], record: MessageRecord): boolean {
  let low = 0;
  let high = transcript.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (transcript[middle].orderKey < record.orderKey) low = middle + 1;
    else high = middle;
  }
  return transcript[low]?.id === record.id;
}
