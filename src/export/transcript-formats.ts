import { ScribeException } from '../common/errors/scribe.exception.js';
import { type Message } from '../common/graphql/models/message.model.js';
import { type Session } from '../common/graphql/models/session.model.js';

/** How a transcript is exported: `?format=` of GET /sessions/{id}/export. */
export type ExportFormat = 'jsonl' | 'markdown' | 'json';

/**
 * Writes a transcript piece by piece: the session, each message, the end. Nothing is kept
 * between the calls but what the format needs (none does), so an export holds one page.
 */
export interface TranscriptFormatter {
  head(session: Session): string;
  /** A message; `index` is its place in the export, 0 for the first. */
  message(message: Message, index: number): string;
  tail(): string;
}

/** What each format is sent as, and how it is written. */
export interface ExportFormatSpec {
  readonly contentType: string;
  readonly extension: string;
  readonly formatter: TranscriptFormatter;
}

// Every field a GraphQL read of Session or Message gives, in its JSON form: times as ISO
// strings (Date's toJSON, as the DateTime scalar is written), JSON fields as they were sent.
const jsonl: TranscriptFormatter = {
  head: (session) => `${JSON.stringify({ session })}\n`,
  message: (message) => `${JSON.stringify({ message })}\n`,
  tail: () => '',
};

// One document, written piecewise: `{"session":…,"messages":[` … `]}`, a message a line.
const json: TranscriptFormatter = {
  head: (session) => `{"session":${JSON.stringify(session)},"messages":[\n`,
  message: (message, index) => `${index === 0 ? '' : ',\n'}${JSON.stringify(message)}`,
  tail: () => '\n]}\n',
};

/** A fence longer than any run of backticks in `text`, so that `text` cannot close it. */
function fenceFor(text: string): string {
  const longest = Math.max(0, ...(text.match(/`+/g) ?? []).map((run) => run.length));
  return '`'.repeat(Math.max(3, longest + 1));
}

/** A labelled JSON value as a fenced block, or nothing for null. */
function jsonBlock(label: string, value: unknown): string {
  if (value === null || value === undefined) return '';
  const text = JSON.stringify(value, null, 2);
  const fence = fenceFor(text);
  return `${label}:\n\n${fence}json\n${text}\n${fence}\n\n`;
}

/** One line of text, for a heading: line breaks become spaces. */
const oneLine = (text: string) => text.replace(/[\r\n\u2028\u2029]+/g, ' ');

// For people: a heading per message, its text as written (chat text is often Markdown
// already), its tool calls and metadata as JSON blocks.
const markdown: TranscriptFormatter = {
  head: (session) =>
    `# ${oneLine(session.title ?? session.id)}\n\n` +
    `Session \`${session.id}\`, created ${session.createdAt.toISOString()}, updated ` +
    `${session.updatedAt.toISOString()}: ${session.messageCount} stored messages ` +
    `(revision ${session.revision}).\n\n` +
    jsonBlock('Metadata', session.metadata),
  message: (message) => {
    const tool = [
      message.toolName !== null ? `tool \`${oneLine(message.toolName)}\`` : '',
      message.toolCallId !== null ? `call \`${oneLine(message.toolCallId)}\`` : '',
    ].filter((part) => part !== '');
    return (
      `### ${message.role.toLowerCase()} · ${message.createdAt.toISOString()}\n\n` +
      (message.redactedAt !== null
        ? `_Redacted ${message.redactedAt.toISOString()}: ${oneLine(message.redactionReason ?? '')}_\n\n`
        : message.editedAt !== null
          ? `_Edited ${message.editedAt.toISOString()}_\n\n`
          : '') +
      (tool.length > 0 ? `(${tool.join(', ')})\n\n` : '') +
      (message.content === '' ? '' : `${message.content}\n\n`) +
      jsonBlock('Tool calls', message.toolCalls) +
      jsonBlock('Metadata', message.metadata)
    );
  },
  tail: () => '',
};

export const EXPORT_FORMATS: Readonly<Record<ExportFormat, ExportFormatSpec>> = {
  jsonl: { contentType: 'application/x-ndjson', extension: 'jsonl', formatter: jsonl },
  markdown: { contentType: 'text/markdown; charset=utf-8', extension: 'md', formatter: markdown },
  json: { contentType: 'application/json', extension: 'json', formatter: json },
};

const NAMES = Object.keys(EXPORT_FORMATS) as ExportFormat[];

/** The format `?format=` names (jsonl when absent); BAD_USER_INPUT for anything else. */
export function exportFormatOf(given: unknown): ExportFormat {
  if (given === undefined) return 'jsonl';
  const named = NAMES.find((name) => name === given);
  if (named !== undefined) return named;
  throw ScribeException.invalidInput('format', `must be one of ${NAMES.join(', ')}`);
}

/**
 * The Content-Disposition of an export: an attachment named after the session. Session ids
 * are ASCII letters, digits and `._:-` (SESSION_ID_PATTERN, checked before), safe to quote.
 */
export function attachmentOf(sessionId: string, format: ExportFormat): string {
  return `attachment; filename="${sessionId}.${EXPORT_FORMATS[format].extension}"`;
}
