import { randomBytes } from 'node:crypto';
import {
  chmod,
  mkdir,
  open,
  readFile,
  readdir,
  rename,
  rm,
  stat,
  type FileHandle,
  unlink,
} from 'node:fs/promises';
import { basename, join } from 'node:path';
import { type MessageRecord } from '../message/message-record.js';
import { MessageRole } from '../message/message-role.js';
import { OrderKeyGenerator } from '../message/order-key.js';
import { SESSION_ID_PATTERN } from '../common/validation/session-id.js';

export const SPOOL_REASON_CAP_DROP = 'transcript_cap_drop';
export const SPOOL_REASON_SHUTDOWN = 'shutdown';
export type SpoolReason = typeof SPOOL_REASON_CAP_DROP | typeof SPOOL_REASON_SHUTDOWN;

/** The reasons the transcript drain owns; files with any other reason are never touched by it. */
export const OWNED_SPOOL_REASONS: readonly string[] = [
  SPOOL_REASON_CAP_DROP,
  SPOOL_REASON_SHUTDOWN,
];

/**
 * init() deletes `.tmp-*` files only once they are this old: another process sharing the
 * directory may be in the middle of writing a younger one.
 */
export const TEMP_FILE_GRACE_MS = 60_000;

const PENDING_PREFIX = 'pending-';
const PENDING_SUFFIX = '.json';
const PENDING_NAME = /^pending-.+\.json$/;
const PENDING_KEY_MS = /^pending-(\d{15})\./;
const TEMP_PREFIX = '.tmp-';
const BAD_SUFFIX = '.bad';
const FILE_MODE = 0o600;
const DIRECTORY_MODE = 0o700;
const ROLES: readonly string[] = Object.values(MessageRole);

// Shared by every instance so that seq increases within the process, as the format promises.
let lastSeq = 0;

export interface SpoolEntry {
  fileName: string;
  sessionId: string;
  reason: string;
  ts: number;
  seq: number;
  record: MessageRecord;
}

export interface SpoolEvents {
  /** A pending file that could not be used; it was moved aside as `<fileName>.bad` when possible. */
  badFile?(fileName: string, error: string): void;
  /** One file was written. */
  written?(reason: SpoolReason): void;
  /** drainSession() stored and deleted `count` (> 0) files. remove() does not report here. */
  replayed?(count: number): void;
}

export interface SpoolStats {
  files: number;
  bySession: { sessionId: string; reason: string; files: number }[];
  oldestFileAgeMs: number | null;
  badFiles: number;
}

/** The on-disk shape of one spooled message; the keys are a contract with other readers. */
interface SpoolFile {
  session_key: string;
  reason: string;
  ts: number;
  seq: number;
  data: {
    session_id: string;
    message: {
      id: string;
      role: MessageRole;
      content: string;
      clientMessageId: string | null;
      toolName: string | null;
      toolCallId: string | null;
      toolCalls: unknown;
      metadata: unknown;
      acceptedAt: number;
      orderKey: string;
    };
  };
}

/**
 * One JSON file per message that the database could not take, named so that file-name order
 * is drop order, written atomically so that a reader never sees half a file.
 */
export class SpoolDirectory {
  private readonly keys = new OrderKeyGenerator();
  // Spool files are written once (an atomic rename) and never changed, so the session and reason
  // read from one stay true until it is gone: a listing for one session reads only that
  // session's files and the ones it has not seen before. Messages are not kept: they are on
  // disk so as not to be in memory.
  private readonly headers = new Map<string, SpoolHeader>();
  // Keys never go below this, so files written after a restart sort after the ones found there.
  private floorMs = 0;

  constructor(
    readonly path: string,
    private readonly events: SpoolEvents = {},
    private readonly now: () => number = Date.now,
  ) {}

  /** mkdir -p with mode 0700, delete leftover temp files, never throws: returns whether usable and the error text. */
  async init(): Promise<{ usable: boolean; error?: string }> {
    try {
      await this.ensureDirectory();
      const names = (await readdir(this.path, { withFileTypes: true }))
        .filter((entry) => entry.isFile())
        .map((entry) => entry.name);
      await this.removeStaleTempFiles(names);
      for (const name of names) {
        const ms = PENDING_KEY_MS.exec(name)?.[1];
        if (ms !== undefined) this.floorMs = Math.max(this.floorMs, Number(ms) + 1);
      }
      await this.checkWritable();
      return { usable: true };
    } catch (error) {
      return { usable: false, error: describeError(error) };
    }
  }

  /** Atomically writes one file for `record` and returns its file name. Throws on any failure. */
  async write(record: MessageRecord, reason: SpoolReason): Promise<string> {
    const now = this.now();
    const fileName = `${PENDING_PREFIX}${this.keys.next(Math.max(now, this.floorMs)).key}${PENDING_SUFFIX}`;
    const body = JSON.stringify(toSpoolFile(record, reason, now, ++lastSeq));
    const tempPath = join(this.path, TEMP_PREFIX + fileName);
    const handle = await this.createFile(tempPath);
    try {
      try {
        await handle.writeFile(body, 'utf8');
        // open() honours the umask; the mode must be exact.
        await handle.chmod(FILE_MODE);
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(tempPath, join(this.path, fileName));
    } catch (error) {
      await rm(tempPath, { force: true }).catch(() => undefined);
      throw error;
    }
    // The rename is only durable once the directory entry is.
    await this.syncDirectory();
    this.emit(() => this.events.written?.(reason));
    return fileName;
  }

  /**
   * Parsed entries in drop order (file-name order), optionally filtered by session and reasons.
   * Unparsable / wrongly shaped `pending-*.json` files are moved aside as `<name>.bad`
   * (events.badFile) and never block the others. Files not named pending-*.json are ignored.
   */
  async list(
    filter: { sessionId?: string; reasons?: readonly string[] } = {},
  ): Promise<SpoolEntry[]> {
    const names = await this.pendingFileNames();
    const present = new Set(names);
    for (const known of this.headers.keys()) {
      if (!present.has(known)) this.headers.delete(known);
    }
    // Files are read a few at a time: one by one is slow on network disks, all at once would
    // open thousands of handles. Results keep the drop order of `names`.
    const parsed = await mapInBatches(names, IO_BATCH, (fileName) =>
      this.readEntry(fileName, filter),
    );
    return parsed.filter((entry): entry is SpoolEntry => entry !== undefined);
  }

  /**
   * One file as an entry; undefined when it vanished, is unreadable, does not match `filter`,
   * or was set aside. The envelope (session and reason) is checked first: a file of a reason
   * this service does not own is never judged by its message, let alone moved.
   */
  private async readEntry(
    fileName: string,
    filter: { sessionId?: string; reasons?: readonly string[] },
  ): Promise<SpoolEntry | undefined> {
    let envelope: SpoolEnvelope | undefined;
    let header = this.headers.get(fileName);
    if (!header) {
      envelope = await this.readEnvelope(fileName);
      if (!envelope) return undefined;
      header = {
        sessionId: envelope.sessionId,
        reason: envelope.reason,
        ts: envelope.ts,
        seq: envelope.seq,
      };
      this.headers.set(fileName, header);
    }
    if (filter.sessionId !== undefined && header.sessionId !== filter.sessionId) return undefined;
    if (filter.reasons !== undefined && !filter.reasons.includes(header.reason)) return undefined;
    envelope ??= await this.readEnvelope(fileName);
    if (!envelope) return undefined;
    try {
      const { sessionId, reason, ts, seq } = envelope;
      return { fileName, sessionId, reason, ts, seq, record: parseSpoolMessage(envelope) };
    } catch (error) {
      if (OWNED_SPOOL_REASONS.includes(envelope.reason)) {
        this.headers.delete(fileName);
        await this.setAside(fileName, describeError(error));
      }
      return undefined;
    }
  }

  /** The parsed file; undefined when it vanished, is unreadable, or was set aside. */
  private async readEnvelope(fileName: string): Promise<SpoolEnvelope | undefined> {
    let text: string;
    try {
      text = await readFile(join(this.path, fileName), 'utf8');
    } catch (error) {
      // Drained or set aside by someone else since readdir.
      if (errorCode(error) === 'ENOENT') return undefined;
      // Not corrupt, just unreadable right now: skip it without moving it.
      this.emit(() => this.events.badFile?.(fileName, describeError(error)));
      return undefined;
    }
    try {
      return parseSpoolEnvelope(text);
    } catch (error) {
      await this.setAside(fileName, describeError(error));
      return undefined;
    }
  }

  /**
   * Replays the session's files of the given reasons in drop order through `store`, one record
   * at a time; see {@link drainEntries}.
   */
  async drainSession(
    sessionId: string,
    store: (record: MessageRecord) => Promise<void>,
    reasons: readonly string[] = OWNED_SPOOL_REASONS,
  ): Promise<{ replayed: number; remaining: number; error?: unknown }> {
    const entries = await this.list({ sessionId, reasons });
    return this.drainEntries(entries, ([record]) => store(record), 1);
  }

  /**
   * Replays `entries` (as listed, in drop order) through `store`, `batchSize` records per call.
   * A file is deleted only after the call that stored its record resolved; on the first failure
   * the drain stops and keeps that batch's files and every later one.
   */
  async drainEntries(
    entries: SpoolEntry[],
    store: (records: MessageRecord[]) => Promise<void>,
    batchSize: number,
  ): Promise<{ replayed: number; remaining: number; error?: unknown }> {
    let replayed = 0;
    let failure: { remaining: number; error: unknown } | undefined;
    for (let start = 0; start < entries.length && !failure; start += batchSize) {
      const batch = entries.slice(start, start + batchSize);
      try {
        await store(batch.map((entry) => entry.record));
      } catch (error) {
        failure = { remaining: entries.length - start, error };
        break;
      }
      // Every record of the batch is stored: delete their files, a few at a time.
      const removals = await mapInBatches(batch, IO_BATCH, (entry) =>
        this.removeFile(entry.fileName).then(
          () => undefined,
          (error: unknown) => ({ error }),
        ),
      );
      replayed += batch.length;
      const failedAt = removals.findIndex((removal) => removal !== undefined);
      if (failedAt >= 0) {
        // Stored but still on disk: it will be replayed again, which the store must tolerate.
        failure = {
          remaining: entries.length - (start + failedAt),
          error: removals[failedAt]?.error,
        };
        break;
      }
    }
    if (replayed > 0) this.emit(() => this.events.replayed?.(replayed));
    return failure ? { replayed, ...failure } : { replayed, remaining: 0 };
  }

  /** Deletes one entry's file (after it was stored by someone else, e.g. boot replay grouping). */
  async remove(entry: SpoolEntry): Promise<void> {
    await this.removeFile(entry.fileName);
  }

  async stats(): Promise<SpoolStats> {
    const entries = await this.list();
    const groups = new Map<string, { sessionId: string; reason: string; files: number }>();
    let oldestTs: number | null = null;
    for (const entry of entries) {
      const groupKey = JSON.stringify([entry.sessionId, entry.reason]);
      const group = groups.get(groupKey) ?? {
        sessionId: entry.sessionId,
        reason: entry.reason,
        files: 0,
      };
      group.files++;
      groups.set(groupKey, group);
      oldestTs = oldestTs === null ? entry.ts : Math.min(oldestTs, entry.ts);
    }
    const bySession = [...groups.values()].sort(
      (left, right) =>
        compareStrings(left.sessionId, right.sessionId) ||
        compareStrings(left.reason, right.reason),
    );
    return {
      files: entries.length,
      bySession,
      oldestFileAgeMs: oldestTs === null ? null : Math.max(0, this.now() - oldestTs),
      badFiles: (await this.fileNames()).filter((name) => name.endsWith(BAD_SUFFIX)).length,
    };
  }

  /** Throws when a file cannot be created in the directory right now (used by /health). */
  async checkWritable(): Promise<void> {
    const probePath = join(this.path, `${TEMP_PREFIX}check-${randomBytes(6).toString('hex')}`);
    const handle = await this.createFile(probePath);
    try {
      await handle.writeFile('ok', 'utf8');
    } finally {
      await handle.close();
      await rm(probePath, { force: true });
    }
  }

  /** Creates a new file, creating the directory first when it went missing since init(). */
  private async createFile(filePath: string): Promise<FileHandle> {
    try {
      return await open(filePath, 'wx', FILE_MODE);
    } catch (error) {
      if (errorCode(error) !== 'ENOENT') throw error;
    }
    // Throws (ENOTDIR / EEXIST) when a regular file stands in the way.
    await this.ensureDirectory();
    return await open(filePath, 'wx', FILE_MODE);
  }

  private async ensureDirectory(): Promise<void> {
    const firstCreated = await mkdir(this.path, { recursive: true, mode: DIRECTORY_MODE });
    // mkdir's mode is cut by the umask; only a directory we created is ours to chmod.
    if (firstCreated !== undefined) await chmod(this.path, DIRECTORY_MODE);
  }

  private async syncDirectory(): Promise<void> {
    const handle = await open(this.path, 'r');
    try {
      await handle.sync();
    } catch (error) {
      // Some file systems cannot fsync a directory; nothing more can be done there.
      if (!['EINVAL', 'ENOTSUP', 'EISDIR'].includes(errorCode(error) ?? '')) throw error;
    } finally {
      await handle.close();
    }
  }

  private async removeStaleTempFiles(names: string[]): Promise<void> {
    for (const name of names.filter((candidate) => candidate.startsWith(TEMP_PREFIX))) {
      const tempPath = join(this.path, name);
      try {
        // mtime comes from the wall clock, so compare with the wall clock, not the injected one.
        if (Date.now() - (await stat(tempPath)).mtimeMs >= TEMP_FILE_GRACE_MS) {
          await rm(tempPath, { force: true });
        }
      } catch {
        // Best effort: a leftover temp file is never read, it only takes space.
      }
    }
  }

  private async setAside(fileName: string, error: string): Promise<void> {
    try {
      await rename(join(this.path, fileName), join(this.path, fileName + BAD_SUFFIX));
    } catch (renameError) {
      // Someone else set it aside or drained it first.
      if (errorCode(renameError) === 'ENOENT') return;
    }
    this.emit(() => this.events.badFile?.(fileName, error));
  }

  private async removeFile(fileName: string): Promise<void> {
    // Entries come from list(), but a hand-made one must not reach outside the directory.
    if (basename(fileName) !== fileName || !PENDING_NAME.test(fileName)) {
      throw new Error(`Not a spool file name: ${fileName}`);
    }
    this.headers.delete(fileName);
    try {
      await unlink(join(this.path, fileName));
    } catch (error) {
      // Already gone: drained by someone else sharing the directory.
      if (errorCode(error) !== 'ENOENT') throw error;
    }
  }

  private async pendingFileNames(): Promise<string[]> {
    return (await this.fileNames()).filter((name) => PENDING_NAME.test(name)).sort();
  }

  private async fileNames(): Promise<string[]> {
    try {
      const entries = await readdir(this.path, { withFileTypes: true });
      return entries.filter((entry) => entry.isFile()).map((entry) => entry.name);
    } catch (error) {
      // Nothing was ever spooled here.
      if (errorCode(error) === 'ENOENT') return [];
      throw error;
    }
  }

  // A failing metrics hook must not turn a successful write or replay into a failure.
  private emit(report: () => void): void {
    try {
      report();
    } catch {
      // Ignored on purpose.
    }
  }
}

function toSpoolFile(record: MessageRecord, reason: string, ts: number, seq: number): SpoolFile {
  return {
    session_key: record.sessionId,
    reason,
    ts,
    seq,
    data: {
      session_id: record.sessionId,
      message: {
        id: record.id,
        role: record.role,
        content: record.content,
        clientMessageId: record.clientMessageId,
        toolName: record.toolName,
        toolCallId: record.toolCallId,
        // Stored as null when absent, so the key is always in the file.
        toolCalls: record.toolCalls ?? null,
        metadata: record.metadata ?? null,
        acceptedAt: record.acceptedAt,
        orderKey: record.orderKey,
      },
    },
  };
}

/** Parses and checks one file; throws with the first problem found. */
interface SpoolHeader {
  sessionId: string;
  reason: string;
  ts: number;
  seq: number;
}

interface SpoolEnvelope extends SpoolHeader {
  file: Record<string, unknown>;
}

/** The parts every spool file has, whoever wrote it. */
function parseSpoolEnvelope(text: string): SpoolEnvelope {
  const file = requireObject(JSON.parse(text) as unknown, 'file');
  return {
    sessionId: requireString(file, 'session_key'),
    reason: requireString(file, 'reason'),
    ts: requireNumber(file, 'ts'),
    seq: requireNumber(file, 'seq'),
    file,
  };
}

/** The message of a spool file, checked field by field. */
function parseSpoolMessage({ file, sessionId }: SpoolEnvelope): MessageRecord {
  const data = requireObject(file.data, 'data');
  if (requireString(data, 'session_id') !== sessionId) {
    throw new Error('data.session_id differs from session_key');
  }
  if (!SESSION_ID_PATTERN.test(sessionId)) throw new Error('session_key is not a session id');
  const message = requireObject(data.message, 'data.message');
  const role = requireString(message, 'role');
  if (!ROLES.includes(role)) throw new Error(`role is not one of ${ROLES.join(', ')}`);
  return {
    id: requireString(message, 'id'),
    sessionId,
    orderKey: requireString(message, 'orderKey'),
    role: role as MessageRole,
    content: requireString(message, 'content'),
    clientMessageId: requireNullableString(message, 'clientMessageId'),
    toolName: requireNullableString(message, 'toolName'),
    toolCallId: requireNullableString(message, 'toolCallId'),
    toolCalls: message.toolCalls ?? null,
    metadata: message.metadata ?? null,
    acceptedAt: requireNumber(message, 'acceptedAt'),
  };
}

function requireObject(value: unknown, name: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new Error(`${name} is not an object`);
  }
  return value as Record<string, unknown>;
}

function requireString(object: Record<string, unknown>, key: string): string {
  const value = object[key];
  if (typeof value !== 'string') throw new Error(`${key} is not a string`);
  return value;
}

function requireNullableString(object: Record<string, unknown>, key: string): string | null {
  const value = object[key];
  if (value !== null && typeof value !== 'string')
    throw new Error(`${key} is not a string or null`);
  return value;
}

function requireNumber(object: Record<string, unknown>, key: string): number {
  const value = object[key];
  if (typeof value !== 'number' || !Number.isFinite(value))
    throw new Error(`${key} is not a number`);
  return value;
}

/** How many files are read or deleted at once. */
const IO_BATCH = 32;

/** `map` with at most `limit` calls running at once; results in input order. */
async function mapInBatches<T, R>(
  items: T[],
  limit: number,
  map: (item: T) => Promise<R>,
): Promise<R[]> {
  const results: R[] = [];
  for (let start = 0; start < items.length; start += limit) {
    results.push(...(await Promise.all(items.slice(start, start + limit).map(map))));
  }
  return results;
}

function compareStrings(left: string, right: string): number {
  return left < right ? -1 : left > right ? 1 : 0;
}

function errorCode(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null && 'code' in error
    ? String(error.code)
    : undefined;
}

function describeError(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
