import { Injectable } from '@nestjs/common';
import { type Page } from '../common/pagination/page-request.js';
import { ScribeConfig } from '../config/scribe-config.js';
import { fromDatabase } from '../database/database-errors.js';
import { SessionQueries } from '../database/session-queries.js';
import { type MessageRecord } from '../message/message-record.js';
import { type SessionRecord } from '../message/session-record.js';
import { type PageReader } from './transcript-stream.js';

// Rows per page: enough that a page's queries (its sizes, then its rows) are few for a long
// transcript, few enough that a page of short messages is a small read. Pages of long ones
// stop sooner, at MAX_PAGE_BYTES, as every page of `messages` does.
export const EXPORT_PAGE_ROWS = 500;

/** A stored transcript opened for export: the session, its first page, and the way on. */
export interface OpenedTranscript {
  session: SessionRecord;
  first: Page<MessageRecord>;
  next: PageReader;
}

/**
 * What an export reads: the stored session and its messages in accepted order, page by page
 * with the keyset reads `messages` pages with (after an order key, bounded by MAX_PAGE_BYTES),
 * straight from the database. An outage is DATABASE_UNAVAILABLE (fromDatabase), as for every
 * read. Only stored messages: what this instance still holds (QUEUED, BUFFERED) is not read.
 */
@Injectable()
export class StoredTranscripts {
  private readonly maxPageBytes: number;

  constructor(
    private readonly queries: SessionQueries,
    config: ScribeConfig,
  ) {
    this.maxPageBytes = config.maxPageBytes;
  }

  /**
   * The session and its first page, or null when no such session is stored. Both are read
   * before an export answers, so that a database that cannot be read is told in its status.
   */
  async open(sessionId: string): Promise<OpenedTranscript | null> {
    const session = await fromDatabase(this.queries.findMetadata(sessionId));
    if (!session) return null;
    const next: PageReader = (after) => this.page(sessionId, after);
    return { session, first: await this.page(sessionId, undefined), next };
  }

  private page(sessionId: string, after: string | undefined): Promise<Page<MessageRecord>> {
    return fromDatabase(
      this.queries.pageOfMessages(
        sessionId,
        { direction: 'forward', count: EXPORT_PAGE_ROWS, after },
        this.maxPageBytes,
      ),
    );
  }
}
