import { ScribeErrorCode } from '../common/errors/scribe-error-code.js';
import { ScribeException } from '../common/errors/scribe.exception.js';
import { type Message } from '../common/graphql/models/message.model.js';
import { type Session } from '../common/graphql/models/session.model.js';
import { AppendStatus } from '../message/append-status.js';
import { MessageRole } from '../message/message-role.js';
import {
  EXPORT_FORMATS,
  attachmentOf,
  exportFormatOf,
  type ExportFormat,
} from './transcript-formats.js';

const session: Session = {
  id: 'user-1:chat',
  title: 'Trip 🗺️ plans',
  metadata: { topic: 'travel' },
  createdAt: new Date(Date.UTC(2025, 0, 2, 3, 4, 5, 6)),
  updatedAt: new Date(Date.UTC(2025, 0, 2, 3, 4, 7, 0)),
  messageCount: 2,
  revision: 3,
};

function message(index: number, changes: Partial<Message> = {}): Message {
  return {
    id: `m${index}`,
    sessionId: session.id,
    status: AppendStatus.PERSISTED,
    role: MessageRole.USER,
    content: `hello 𝔘 é ${index}`,
    clientMessageId: null,
    toolName: null,
    toolCallId: null,
    toolCalls: null,
    metadata: null,
    revision: 1,
    editedAt: null,
    redacted: false,
    redactedAt: null,
    redactionReason: null,
    createdAt: new Date(Date.UTC(2025, 0, 2, 3, 4, 5, index)),
    ...changes,
  };
}

const TOOL = message(1, {
  role: MessageRole.ASSISTANT,
  content: '',
  clientMessageId: 'c1',
  toolName: 'search',
  toolCallId: 'call-1',
  toolCalls: [{ name: 'search', arguments: { q: 'a ``` fence' } }],
  metadata: { model: 'x' },
});

/** A whole export in `format`, as its pieces are written one after another. */
function exported(format: ExportFormat, messages: Message[]): string {
  const { formatter } = EXPORT_FORMATS[format];
  return (
    formatter.head(session) +
    messages.map((each, index) => formatter.message(each, index)).join('') +
    formatter.tail()
  );
}

const asJson = (value: unknown) => JSON.parse(JSON.stringify(value)) as unknown;

describe('transcript formats', () => {
  it('writes JSON Lines: the session, then one message a line, times as ISO strings', () => {
    const text = exported('jsonl', [message(0), TOOL]);
    expect(text.endsWith('\n')).toBe(true);
    const lines = text.trimEnd().split('\n');
    expect(lines.map((line) => JSON.parse(line))).toEqual([
      { session: asJson(session) },
      { message: asJson(message(0)) },
      { message: asJson(TOOL) },
    ]);
    expect(JSON.parse(lines[0]).session.createdAt).toBe('2025-01-02T03:04:05.006Z');
    expect(Object.keys(JSON.parse(lines[2]).message).sort()).toEqual(
      [
        'clientMessageId',
        'content',
        'createdAt',
        'editedAt',
        'id',
        'metadata',
        'redacted',
        'redactedAt',
        'redactionReason',
        'revision',
        'role',
        'sessionId',
        'status',
        'toolCallId',
        'toolCalls',
        'toolName',
      ].sort(),
    );
  });

  it('writes one JSON document, piece by piece, with or without messages', () => {
    expect(JSON.parse(exported('json', [message(0), TOOL]))).toEqual({
      session: asJson(session),
      messages: [asJson(message(0)), asJson(TOOL)],
    });
    expect(JSON.parse(exported('json', []))).toEqual({ session: asJson(session), messages: [] });
  });

  it('writes Markdown: a heading, each message under its role and time, JSON in blocks', () => {
    const text = exported('markdown', [message(0), TOOL]);
    expect(text).toMatch(
      /^# Trip 🗺️ plans\n\nSession `user-1:chat`, created 2025-01-02T03:04:05\.006Z/,
    );
    expect(text).toContain('### user · 2025-01-02T03:04:05.000Z\n\nhello 𝔘 é 0\n\n');
    expect(text).toContain(
      '### assistant · 2025-01-02T03:04:05.001Z\n\n(tool `search`, call `call-1`)',
    );
    expect(text).toContain('Metadata:\n\n```json\n{\n  "topic": "travel"\n}\n```\n');
    // A fence longer than the backticks inside the block, which cannot close it early.
    expect(text).toContain('Tool calls:\n\n````json\n[\n');
    expect(text).toContain('"q": "a ``` fence"');
  });

  it('titles a Markdown export by its id when it has no title, on one line', () => {
    const { formatter } = EXPORT_FORMATS.markdown;
    expect(formatter.head({ ...session, title: null, metadata: null })).toMatch(
      /^# user-1:chat\n\nSession/,
    );
    expect(formatter.head({ ...session, title: 'one\ntwo\r\nthree' })).toMatch(
      /^# one two three\n/,
    );
  });

  it('sends each format with its type and a file name after the session', () => {
    expect(EXPORT_FORMATS.jsonl.contentType).toBe('application/x-ndjson');
    expect(EXPORT_FORMATS.markdown.contentType).toBe('text/markdown; charset=utf-8');
    expect(EXPORT_FORMATS.json.contentType).toBe('application/json');
    expect(attachmentOf('user-1:chat', 'markdown')).toBe('attachment; filename="user-1:chat.md"');
    expect(attachmentOf('a.b', 'jsonl')).toBe('attachment; filename="a.b.jsonl"');
  });

  it('takes jsonl by default and refuses any other format as BAD_USER_INPUT', () => {
    expect(exportFormatOf(undefined)).toBe('jsonl');
    expect(exportFormatOf('markdown')).toBe('markdown');
    expect(exportFormatOf('json')).toBe('json');
    for (const given of ['', 'JSON', 'csv', ['json', 'jsonl'], { a: 1 }]) {
      let refusal: unknown;
      try {
        exportFormatOf(given);
      } catch (error) {
        refusal = error;
      }
      expect(refusal).toBeInstanceOf(ScribeException);
      expect(refusal).toMatchObject({
        code: ScribeErrorCode.BadUserInput,
        field: 'format',
        message: 'format: must be one of jsonl, markdown, json',
      });
    }
  });
});
