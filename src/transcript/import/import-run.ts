import { ScribeException } from '../../common/errors/scribe.exception.js';
import { type ExportedSessionFields } from '../../database/session-updates.js';
import { MAX_BATCH_MESSAGES } from '../input-rules.js';
import { PartlyImported, type ImportedMessage } from '../transcript-importer.js';
import { type TranscriptService } from '../transcript.service.js';
import { parseImportLine } from './import-lines.js';
import { type ImportTally } from './import-tally.js';
import { ndjsonLines } from './ndjson-lines.js';

// A batch is stored once it holds this many bytes of lines, or MAX_BATCH_MESSAGES messages:
// an import holds one batch, whatever the file's length.
const MAX_BATCH_BYTES = 4 * 1024 * 1024;
// A line's JSON may escape every character of a message (`\u0001` is six bytes for one),
// and carries its fields' names and the session's id.
const LINE_OVERHEAD_BYTES = 64 * 1024;
// The ids a run remembers to tell a file with an id twice (no export has one) from an export:
// past this many the session's own fields are not restored (about 40 MB of numbers).
const MAX_REMEMBERED_IDS = 1_000_000;

/** A number for a UUID (its last 64 bits, folded into a double): equal ids, equal numbers. */
const idKey = (id: string) =>
  Number.parseInt(id.slice(24), 16) + Number.parseInt(id.slice(19, 23), 16) / 65_536;

/**
 * One import's body, read line by line and stored in batches through the write path, in the
 * order given. A refused line stops it: the lines before it are stored (each batch before it,
 * then the part of its own batch that comes before it), nothing after it is.
 */
export class ImportRun {
  private head: ExportedSessionFields | undefined;
  private batch: ImportedMessage[] = [];
  private batchLines: number[] = [];
  private batchBytes = 0;
  private readonly seen = new Set<number>();
  private repeats = false;

  constructor(
    private readonly sessionId: string,
    private readonly transcripts: TranscriptService,
    private readonly maxMessageBytes: number,
    private readonly tally: ImportTally,
  ) {}

  /**
   * Whether the file can be an export, as far as this run can tell: no id twice (a repeat is
   * counted as existing, and would make a file of N lines pass for a session of N messages).
   */
  get distinctIds(): boolean {
    return !this.repeats && this.seen.size <= MAX_REMEMBERED_IDS;
  }

  /** Reads and stores the whole body; the session's own fields from its first line. */
  async consume(body: AsyncIterable<Buffer>): Promise<ExportedSessionFields> {
    const maxLineBytes = 6 * this.maxMessageBytes + LINE_OVERHEAD_BYTES;
    try {
      for await (const { text, line } of ndjsonLines(body, maxLineBytes)) {
        this.tally.lines = line;
        this.take(text, line);
        if (this.batch.length >= MAX_BATCH_MESSAGES || this.batchBytes >= MAX_BATCH_BYTES) {
          await this.flush();
        }
      }
    } catch (error) {
      // What came before the refused line (or the cut) is whole: it is stored all the same.
      await this.flush();
      throw error;
    }
    await this.flush();
    if (!this.head) {
      throw ScribeException.invalidInput(
        'line 1',
        'the body is empty: an import is the session ({"session":{…}}), then its messages',
      );
    }
    return this.head;
  }

  private take(text: string, line: number): void {
    const parsed = parseImportLine(
      text,
      line,
      this.sessionId,
      this.maxMessageBytes,
      this.head === undefined,
    );
    if (parsed.kind === 'session') {
      this.head = parsed.session;
      return;
    }
    if (!this.repeats && this.seen.size <= MAX_REMEMBERED_IDS) {
      const key = idKey(parsed.message.id);
      if (this.seen.has(key)) this.repeats = true;
      this.seen.add(key);
    }
    this.batch.push(parsed.message);
    this.batchLines.push(line);
    this.batchBytes += text.length;
  }

  private async flush(): Promise<void> {
    if (this.batch.length === 0) return;
    const batch = this.batch;
    const lines = this.batchLines;
    this.batch = [];
    this.batchLines = [];
    this.batchBytes = 0;
    try {
      await this.store(batch, lines);
    } catch (error) {
      // Stored but for the lines refused, those after them included: every one counted.
      if (error instanceof PartlyImported) {
        this.tally.add(error.stored);
        throw error;
      }
      // A batch is refused whole; the lines before the one refused are stored all the same.
      const at = refusedIndex(error, lines);
      if (at > 0) await this.store(batch.slice(0, at), lines.slice(0, at));
      throw error;
    }
  }

  private async store(batch: ImportedMessage[], lines: number[]): Promise<void> {
    const answers = await this.transcripts.importRecords(
      this.sessionId,
      batch,
      (index) => `line ${lines[index]}.message`,
      `lines ${lines[0]} to ${lines[lines.length - 1]}`,
    );
    this.tally.add(answers);
  }
}

/** Where in a batch of `lines` the line an error names is; -1 when it names none of them. */
function refusedIndex(error: unknown, lines: readonly number[]): number {
  const field = error instanceof ScribeException ? error.field : undefined;
  const line = field === undefined ? undefined : /^line (\d+)/.exec(field)?.[1];
  return line === undefined ? -1 : lines.indexOf(Number(line));
}
