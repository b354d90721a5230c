import { type MessageRecord } from '../../message/message-record.js';
import { MessageRole } from '../../message/message-role.js';
import { formatOrderKey } from '../../message/order-key.js';
import { encodeJournalLine } from '../journal-codec.js';

/** When the messages of these specs were accepted: a fixed time, so names and keys are too. */
export const ACCEPTED_AT = 1_764_460_800_000;

/**
 * The `sequence`-th message of a session, as if accepted at ACCEPTED_AT + sequence: its id is
 * `<sessionId>-<sequence>`, and its order key sorts by `sequence`.
 */
export function messageRecord(
  sessionId: string,
  sequence: number,
  overrides: Partial<MessageRecord> = {},
): MessageRecord {
  return {
    id: `${sessionId}-${sequence}`,
    sessionId,
    orderKey: formatOrderKey(ACCEPTED_AT + sequence, 0, 'f1x7e5a1'),
    role: MessageRole.USER,
    content: `message ${sequence} of ${sessionId}`,
    clientMessageId: null,
    toolName: null,
    toolCallId: null,
    toolCalls: null,
    metadata: null,
    acceptedAt: ACCEPTED_AT + sequence,
    ...overrides,
  };
}

/** Bytes of a segment: records as their journal lines, strings and buffers as they are. */
export function segmentData(parts: readonly (MessageRecord | string | Buffer)[]): {
  data: Buffer;
  /** Offset and length of each record's line, by id. */
  lines: Map<string, { offset: number; length: number }>;
} {
  const buffers: Buffer[] = [];
  const lines = new Map<string, { offset: number; length: number }>();
  let offset = 0;
  for (const part of parts) {
    const bytes =
      typeof part === 'string' || Buffer.isBuffer(part)
        ? Buffer.from(part)
        : encodeJournalLine(part);
    if (!(typeof part === 'string' || Buffer.isBuffer(part))) {
      lines.set(part.id, { offset, length: bytes.length });
    }
    buffers.push(bytes);
    offset += bytes.length;
  }
  return { data: Buffer.concat(buffers), lines };
}
