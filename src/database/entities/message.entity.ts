import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { epochMsTransformer } from '../epoch-ms.transformer.js';

/** Any JSON value, as stored in a `simple-json` column. */
export type JsonColumnValue = string | number | boolean | object | null;

@Entity('messages')
@Index('UQ_messages_session_order', ['sessionId', 'orderKey'], { unique: true })
@Index('UQ_messages_session_client_id', ['sessionId', 'clientMessageId'], { unique: true })
export class MessageEntity {
  @PrimaryColumn({ type: 'varchar', length: 36 })
  id: string;

  @Column({ name: 'session_id', type: 'varchar', length: 128 })
  sessionId: string;

  /** Sorts a session's messages into the order their appends were accepted. */
  @Column({ name: 'order_key', type: 'varchar', length: 64 })
  orderKey: string;

  @Column({ type: 'varchar', length: 16 })
  role: string;

  @Column({ type: 'text' })
  content: string;

  @Column({ name: 'client_message_id', type: 'varchar', length: 256, nullable: true })
  clientMessageId: string | null;

  @Column({ name: 'tool_name', type: 'varchar', length: 256, nullable: true })
  toolName: string | null;

  @Column({ name: 'tool_call_id', type: 'varchar', length: 256, nullable: true })
  toolCallId: string | null;

  @Column({ name: 'tool_calls', type: 'simple-json', nullable: true })
  toolCalls: JsonColumnValue;

  @Column({ type: 'simple-json', nullable: true })
  metadata: JsonColumnValue;

  @Column({ name: 'accepted_at', type: 'bigint', transformer: epochMsTransformer })
  acceptedAt: number;

  /** When an imported message was written where it came from; null for one accepted here. */
  @Column({ name: 'created_at', type: 'bigint', nullable: true, transformer: epochMsTransformer })
  createdAt: number | null;

  @Column({ name: 'stored_at', type: 'bigint', transformer: epochMsTransformer })
  storedAt: number;

  /** Its place in the session's commit order (see the commit-seq migration); null before it. */
  @Column({ name: 'commit_seq', type: 'bigint', nullable: true, transformer: epochMsTransformer })
  commitSeq: number | null;

  /** Its own revision: one more for each edit or redaction; null (read as 1) as appended. */
  @Column({ type: 'integer', nullable: true })
  revision: number | null;

  @Column({ name: 'edited_at', type: 'bigint', nullable: true, transformer: epochMsTransformer })
  editedAt: number | null;

  /** When its content was removed for good; null while it has it. */
  @Column({ name: 'redacted_at', type: 'bigint', nullable: true, transformer: epochMsTransformer })
  redactedAt: number | null;

  @Column({ name: 'redaction_reason', type: 'text', nullable: true })
  redactionReason: string | null;

  /** The commit number of its last change (see the message-changes migration); null before. */
  @Column({ name: 'change_seq', type: 'bigint', nullable: true, transformer: epochMsTransformer })
  changeSeq: number | null;
}
