import { Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { describeError } from '../common/errors/describe-error.js';
import { type MessageRecord } from '../message/message-record.js';
import { type OrderKeyGenerator } from '../message/order-key.js';
import { CommitFeed } from './commit-feed.js';
import { EventEmitter2 } from '@nestjs/event-emitter';
import { SessionDeleted } from '../message/message-events.js';
import {
  CHANGES_CHANNEL,
  DELETIONS_CHANNEL,
  HEARTBEAT_CHANNEL,
  MESSAGES_CHANNEL,
  NOTIFY_SQL,
  SCHEMA_SUFFIX_SQL,
  SESSIONS_CHANNEL,
  parseChangeNotice,
  parseMessageNotice,
  type ChangeNotice,
  type MessageNotice,
} from './commit-notices.js';
import { type ListenHeartbeatSettings } from '../config/scribe-config.js';
import { ListenHeartbeat } from './listen-heartbeat.js';
import { TCP_KEEPALIVE } from './postgres-keepalive.js';
import { type SessionQueries } from './session-queries.js';

/** Notices whose messages one read fetches: up to 20 × 200 ids. */
const NOTICES_PER_READ = 20;

type Notice =
  | { kind: 'messages'; notice: MessageNotice }
  | { kind: 'changed'; notice: ChangeNotice }
  | { kind: 'session'; sessionId: string }
  | { kind: 'deleted'; sessionId: string };

export interface PostgresFeedSettings {
  url: string;
  /** How long to wait before listening again after the connection was lost. */
  retryIntervalMs: number;
  heartbeat: ListenHeartbeatSettings;
}

/**
 * Hears every instance's commits through LISTEN on a connection of its own. A notice names the
 * messages; the ones of sessions somebody here follows are read back by id, and handed on in
 * the order PostgreSQL delivered the notices (the order the writes committed), one read at a
 * time. While the connection is down notices are lost for good: followers are told
 * (`interrupted`), and the feed is not live until it listens again.
 *
 * A connection that stays open but stops delivering is down too: the feed sends itself a
 * notice every few seconds on a connection of another pool, on a channel of its own, and
 * counts the LISTEN connection lost when none comes back in time (listen-heartbeat.ts).
 */
export class PostgresCommitFeed
  extends CommitFeed
  implements OnApplicationBootstrap, OnApplicationShutdown
{
  private readonly logger = new Logger(PostgresCommitFeed.name);
  private client: pg.Client | undefined;
  private listening = false;
  private stopped = false;
  private retry: NodeJS.Timeout | undefined;
  private readonly pending: Notice[] = [];
  private draining = false;
  /** The schema's ending of every channel name (see SCHEMA_SUFFIX_SQL). */
  private suffix = '';
  /** This feed's own heartbeat channel: no other instance hears its notices. */
  private readonly heartbeatChannel = `${HEARTBEAT_CHANNEL}_${randomBytes(6).toString('hex')}`;
  private readonly heartbeat: ListenHeartbeat;
  // Not the LISTEN connection, whose silence is what is watched; and not the write or read
  // pools either, where a heartbeat would wait behind a long batch or a busy moment and be
  // taken for silence.
  private readonly sender: pg.Pool;

  constructor(
    private readonly settings: PostgresFeedSettings,
    private readonly queries: SessionQueries,
    private readonly events: EventEmitter2,
    // Moved past the times of other instances' commits read here (see OrderKeyGenerator).
    private readonly clock?: Pick<OrderKeyGenerator, 'floor'>,
  ) {
    super();
    this.sender = new pg.Pool({
      connectionString: settings.url,
      max: 1,
      connectionTimeoutMillis: 3000,
      query_timeout: 5000,
      ...TCP_KEEPALIVE,
    });
    // An idle sender connection that broke: the next heartbeat connects again.
    this.sender.on('error', () => undefined);
    this.heartbeat = new ListenHeartbeat(
      settings.heartbeat,
      (payload) => this.sender.query(NOTIFY_SQL, [this.heartbeatChannel, payload]),
      (reason) => {
        if (this.client) this.lost(this.client, reason);
      },
    );
  }

  get live(): boolean {
    return this.listening;
  }

  // The first attempt is waited for, so that an instance is live once it serves; one that
  // fails is not: an instance must start while the database is down, and listens once it can.
  async onApplicationBootstrap(): Promise<void> {
    await this.connect();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retry);
    this.heartbeat.stop();
    const client = this.client;
    this.client = undefined;
    this.listening = false;
    await Promise.all([client?.end().catch(() => undefined), this.sender.end()]);
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    const client = new pg.Client({
      connectionString: this.settings.url,
      connectionTimeoutMillis: 3000,
      // A LISTEN that is never answered must not hold the feed: it counts as a lost connection.
      query_timeout: 5000,
      ...TCP_KEEPALIVE,
    });
    this.client = client;
    client.on('notification', (message) => this.heard(message.channel, message.payload));
    client.on('error', (error) => this.lost(client, describeError(error)));
    client.on('end', () => this.lost(client, 'the connection ended'));
    try {
      await client.connect();
      const { rows } = await client.query<{ suffix: string }>(
        `SELECT ${SCHEMA_SUFFIX_SQL} AS suffix`,
      );
      this.suffix = rows[0].suffix;
      await client.query(
        [
          MESSAGES_CHANNEL,
          CHANGES_CHANNEL,
          SESSIONS_CHANNEL,
          DELETIONS_CHANNEL,
          this.heartbeatChannel,
        ]
          .map((channel) => `LISTEN "${channel}${this.suffix}"`)
          .join('; '),
      );
    } catch (error) {
      this.lost(client, describeError(error));
      return;
    }
    if (this.client !== client) return;
    this.listening = true;
    this.heartbeat.start();
    this.logger.log('Listening for commits of every instance');
  }

  private lost(client: pg.Client, reason: string): void {
    if (this.client !== client) return;
    this.client = undefined;
    const wasListening = this.listening;
    this.listening = false;
    this.heartbeat.stop();
    client.removeAllListeners('end');
    // Destroyed, not ended: a graceful goodbye on a socket that delivers nothing would wait
    // forever. (The 'error' listener stays, so that what the socket says last is heard.)
    client.connection.stream.destroy();
    client.end().catch(() => undefined);
    if (this.stopped) return;
    if (wasListening) {
      this.logger.warn(`Stopped hearing commits (${reason}); listening again shortly`);
      this.listener?.interrupted(reason);
    }
    this.retry = setTimeout(() => void this.connect(), this.settings.retryIntervalMs);
    this.retry.unref();
  }

  private heard(named: string, payload: string | undefined): void {
    const channel = named.endsWith(this.suffix) ? named.slice(0, -this.suffix.length) : named;
    if (channel === this.heartbeatChannel) {
      this.heartbeat.heard();
      return;
    }
    if (channel === SESSIONS_CHANNEL && payload) {
      this.pending.push({ kind: 'session', sessionId: payload });
    } else if (channel === DELETIONS_CHANNEL && payload) {
      this.pending.push({ kind: 'deleted', sessionId: payload });
    } else if (channel === CHANGES_CHANNEL) {
      const notice = parseChangeNotice(payload);
      if (notice) this.pending.push({ kind: 'changed', notice });
    } else if (channel === MESSAGES_CHANNEL) {
      const notice = parseMessageNotice(payload);
      if (notice) this.pending.push({ kind: 'messages', notice });
    }
    void this.drain();
  }

  /** Hands on what was heard, in order: each batch of notices waits for the one before. */
  private async drain(): Promise<void> {
    if (this.draining) return;
    this.draining = true;
    try {
      while (this.pending.length > 0) {
        const batch = this.pending.splice(0, NOTICES_PER_READ);
        await this.deliver(batch).catch((error: unknown) => {
          // A read that failed leaves followers short of messages they were owed.
          this.logger.warn(`Could not read what was committed: ${describeError(error)}`);
          this.listener?.interrupted(describeError(error));
        });
      }
    } finally {
      this.draining = false;
    }
  }

  private async deliver(batch: Notice[]): Promise<void> {
    const listener = this.listener;
    if (!listener) return;
    // A deletion concerns this instance's held messages too, followed or not.
    const wanted = batch.filter(
      (item) =>
        item.kind === 'deleted' ||
        listener.follows('notice' in item ? item.notice.sessionId : item.sessionId),
    );
    const ids = wanted.flatMap((item) =>
      item.kind === 'messages'
        ? item.notice.messageIds
        : item.kind === 'changed'
          ? [item.notice.messageId]
          : [],
    );
    const byId = new Map<string, MessageRecord>(
      (await this.queries.messagesByIds(ids)).map((record) => [record.id, record]),
    );
    for (const item of wanted) {
      if (item.kind === 'messages') {
        const records = item.notice.messageIds.flatMap((id) => byId.get(id) ?? []);
        for (const record of records) this.clock?.floor(record.acceptedAt);
        if (records.length > 0) listener.messages(item.notice.sessionId, records);
      } else if (item.kind === 'changed') {
        // Read after a later change of it: that change's own notice hands the later state on.
        const record = byId.get(item.notice.messageId);
        if (record?.changeSeq === item.notice.seq) listener.messageChanged(record);
      } else if (item.kind === 'session') {
        const session = await this.queries.findMetadata(item.sessionId);
        if (session) listener.sessionChanged(session);
      } else {
        this.events.emit(SessionDeleted.event, new SessionDeleted(item.sessionId));
      }
    }
  }
}
