import { type OnModuleInit } from '@nestjs/common';
import { constants, type Stats } from 'node:fs';
import { access, chmod, mkdir, stat } from 'node:fs/promises';
import { dirname, isAbsolute, relative, resolve } from 'node:path';
import { errorCode } from '../common/errors/describe-error.js';
import { ScribeConfig } from './scribe-config.js';

/**
 * A data directory Scribe cannot use: it cannot be created, is not a directory, or this
 * process cannot write it. One line naming the option and the OS's reason; no retry mends it.
 */
export class UnusableDirectoryError extends Error {
  override readonly name = 'UnusableDirectoryError';

  constructor(
    /** The option that names it: `dataDir` or `spoolDir`. */
    readonly option: 'dataDir' | 'spoolDir',
    readonly directory: string,
    reason: string,
  ) {
    super(`Scribe option ${option} (${directory}): ${reason}`);
  }
}

/** What the check asks of the file system (node:fs/promises; a test may fake it). */
export interface DirectoryFs {
  stat(path: string): Promise<Pick<Stats, 'isDirectory' | 'isFile'>>;
  mkdir(path: string, mode: number): Promise<unknown>;
  chmod(path: string, mode: number): Promise<void>;
  access(path: string, mode: number): Promise<void>;
}

const NODE_FS: DirectoryFs = { stat, mkdir: (path, mode) => mkdir(path, { mode }), chmod, access };

// The modes a directory made here gets: the umask's for the data directory and its parents
// (as `mkdir -p` does), and exactly the journal's own for the spool (see NodeJournalFiles).
const DATA_DIRECTORY_MODE = 0o777;
const SPOOL_DIRECTORY_MODE = 0o700;

/**
 * Checks at module init, before the database and the journal open anything, that the
 * directories the options name are usable (see checkDataDirectories).
 */
export class DataDirectories implements OnModuleInit {
  constructor(
    private readonly config: ScribeConfig,
    private readonly fs: DirectoryFs = NODE_FS,
  ) {}

  onModuleInit(): Promise<void> {
    return checkDataDirectories(this.config, this.fs);
  }
}

/**
 * Creates what is missing of the data directory and of the spool directory (mode 0700, as the
 * journal makes it), and throws UnusableDirectoryError, one line naming the option:
 * - for the data directory (SQLite's, and the default spool's parent), when it cannot be
 *   created, is not a directory or cannot be written: no retry mends it, and SQLite would
 *   only fail at every retry as if the database were down;
 * - for the spool directory, only when it cannot be created where the journal's own mkdir
 *   would hang (below). A spool unusable otherwise (a file in its way, not writable) is the
 *   journal's to report: Scribe starts, answers BUFFERED and picks up the fix without a
 *   restart (SpoolService.onModuleInit), as it does for a spool lost while running.
 * A symlink is followed here: the journal refuses one itself.
 *
 * Why not mkdir's `recursive`, as TypeORM and the journal use: on a file system that answers
 * ENOENT for a directory it will never hold (/proc/x), Node's recursive mkdir never settles,
 * and the start hung in the first open. Each level is made here, one at a time.
 */
export async function checkDataDirectories(
  config: ScribeConfig,
  fs: DirectoryFs = NODE_FS,
): Promise<void> {
  const { dataDir, spoolDir, database } = config;
  const refuseData = (reason: string) => new UnusableDirectoryError('dataDir', dataDir, reason);
  // The default spool is inside dataDir: refused, it is dataDir the operator must fix.
  const inDataDir = spoolDir === resolve(dataDir, 'pending_messages');
  if (database.kind === 'sqlite' || inDataDir) {
    await usableDirectory(fs, dataDir, dataDir, refuseData, DATA_DIRECTORY_MODE);
  }
  if (database.kind === 'sqlite') {
    // The spool at the database's path (or the database in the spool) would start a Scribe that
    // can never open its database, or whose journal holds SQLite's files as foreign ones.
    if (within(spoolDir, database.path) || within(database.path, spoolDir)) {
      throw new UnusableDirectoryError(
        'spoolDir',
        spoolDir,
        `holds or is held by the SQLite database ${database.path}: give the journal a folder of its own`,
      );
    }
    const file = await found(fs, database.path, refuseData);
    if (file && !file.isFile()) throw refuseData(`${database.path} is not a file`);
  }
  const named = inDataDir ? dataDir : spoolDir;
  const refuseSpool = (reason: string) =>
    inDataDir ? refuseData(reason) : new UnusableDirectoryError('spoolDir', spoolDir, reason);
  try {
    await usableDirectory(fs, spoolDir, named, (reason, hangs) =>
      hangs ? refuseSpool(reason) : LEFT_TO_THE_JOURNAL,
    );
  } catch (error) {
    if (error !== LEFT_TO_THE_JOURNAL) throw error;
  }
}

const LEFT_TO_THE_JOURNAL = new Error('left to the journal');

/**
 * Makes `directory` (of `mode`, exactly) and its missing parents, then checks it is a
 * directory this process can write. Reasons name the path at fault unless it is `named`.
 */
async function usableDirectory(
  fs: DirectoryFs,
  directory: string,
  named: string,
  // `hangs`: a directory mkdir's `recursive` would never settle on (see checkDataDirectories).
  refuse: (reason: string, hangs: boolean) => Error,
  mode = SPOOL_DIRECTORY_MODE,
): Promise<void> {
  const missing: string[] = [];
  let at = directory;
  let existing = await found(fs, at, refuse);
  while (existing === null && dirname(at) !== at) {
    missing.push(at);
    at = dirname(at);
    existing = await found(fs, at, refuse);
  }
  if (existing === null) throw refuse(`cannot be created: ${at} does not exist`, false);
  if (!existing.isDirectory()) {
    throw refuse(at === named ? 'not a directory' : `${at} is not a directory`, false);
  }
  for (const level of missing.reverse()) {
    try {
      await fs.mkdir(level, level === directory ? mode : DATA_DIRECTORY_MODE);
      // mkdir's mode is cut by the umask; the spool's must be exact.
      if (level === directory && mode !== DATA_DIRECTORY_MODE) await fs.chmod(level, mode);
    } catch (error) {
      // Made meanwhile by another instance sharing the directory: as good as made here.
      const code = errorCode(error);
      if (code !== 'EEXIST')
        throw refuse(`cannot be created (${osReason(error)})`, code === 'ENOENT');
    }
  }
  try {
    // Asked of the kernel, not worked out from the mode: ACLs and read-only mounts decide too.
    await fs.access(directory, constants.W_OK | constants.X_OK);
  } catch (error) {
    throw refuse(`not writable (${osReason(error)})`, false);
  }
}

/** What is at `path`, null when nothing is; any other failure refused with the OS's reason. */
async function found(
  fs: DirectoryFs,
  path: string,
  refuse: (reason: string, hangs: boolean) => Error,
): Promise<Pick<Stats, 'isDirectory' | 'isFile'> | null> {
  try {
    return await fs.stat(path);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return null;
    throw refuse(osReason(error), false);
  }
}

/** The OS's reason, one line (`ENOTDIR: not a directory, stat '/dev/null/x'`), of any realm. */
function osReason(error: unknown): string {
  return typeof error === 'object' && error !== null && 'message' in error
    ? String(error.message)
    : String(error);
}

/** Whether `inner` is `outer` or lies under it. */
function within(inner: string, outer: string): boolean {
  const path = relative(resolve(outer), resolve(inner));
  return path === '' || (!path.startsWith('..') && !isAbsolute(path));
}
