// What the journal asks of the spool directory: NodeJournalFiles does it on the real file
// system, FakeJournalFiles in memory for specs.

/** Which file a name or a handle is: a name that now points at another is not the one opened. */
export interface FileIdentity {
  dev: number;
  ino: number;
}

/** An entry of the spool directory that is not a regular file, so never opened. */
export interface IrregularEntry {
  name: string;
  kind: 'symlink' | 'directory' | 'other';
}

/** A file the journal writes at positions it chooses, and syncs. */
export interface WritableFile {
  /** Writes all of `data` at `position`; rejects (perhaps after writing part of it) on failure. */
  write(data: Buffer, position: number): Promise<void>;
  /** fdatasync: the bytes written so far, and the size, are on disk. */
  sync(): Promise<void>;
  truncate(size: number): Promise<void>;
  /** fstat: the file this handle writes, whatever its name points at now. */
  identity(): Promise<FileIdentity>;
  close(): Promise<void>;
}

/**
 * The spool directory as the journal uses it. One seam for every file operation, so that specs
 * can make a write tear half way, a sync fail or the disk fill up, at will.
 */
export interface JournalFiles {
  readonly directory: string;
  /**
   * mkdir -p with mode 0700, then checkDirectory(): rejects with SpoolDirectoryError when the
   * name is not a directory this process can write.
   */
  ensureDirectory(): Promise<FileIdentity>;
  /**
   * lstat of the directory itself: rejects with SpoolDirectoryError when it is a symlink, not a
   * directory, or one this process cannot write (ENOENT as is when it is gone).
   */
  checkDirectory(): Promise<FileIdentity>;
  /**
   * lstat of the directory's own name, no more (no access check): what stands at SPOOL_DIR
   * now, a symlink's own inode when one does, or null when nothing does. Cheap enough for
   * every batch.
   */
  directoryIdentity(): Promise<FileIdentity | null>;
  /** Names of the regular files in the directory (none when it does not exist). */
  list(): Promise<string[]>;
  /** The entries that are not regular files (symlinks, directories, ...): never opened. */
  irregular(): Promise<IrregularEntry[]>;
  /** lstat: what the name is now, or null when it is gone. */
  identity(name: string): Promise<FileIdentity | null>;
  /** Creates a new empty file (mode 0600) and makes its directory entry durable. */
  create(name: string): Promise<WritableFile>;
  /** Opens a file for appending, creating it when missing; resolves with it and its size. */
  openForAppend(name: string): Promise<{ file: WritableFile; size: number }>;
  /**
   * Opens an existing file to write bytes in place, where the write says (a scrub of one line);
   * rejects (ENOENT) when there is none: nothing is created.
   */
  openForOverwrite(name: string): Promise<WritableFile>;
  read(name: string): Promise<Buffer>;
  /** The bytes of each range, in the order asked. */
  readRanges(
    name: string,
    ranges: readonly { offset: number; length: number }[],
  ): Promise<Buffer[]>;
  /** Deletes a file; one already gone is not an error. */
  remove(name: string): Promise<void>;
  /** Age in ms of a file by its mtime, or undefined when it is gone. */
  ageMs(name: string): Promise<number | undefined>;
  /**
   * Rejects when a line of `recordBytes` could not be journaled right now: the file system has
   * less room than that (statfs), or a file cannot be created and written in the directory.
   */
  checkWritable(recordBytes: number): Promise<void>;
}
