import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { link, open, rename, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { errorCode } from '../common/errors/describe-error.js';
import { syncDirectory } from './node-journal-files.js';
import { DATABASE_ID_FILE, TEMP_PREFIX } from './segment-names.js';

const FILE_MODE = 0o600;
// What a database id may look like: what Scribe writes is 16 hex digits.
const DATABASE_ID = /^[0-9A-Za-z_-]{1,64}$/;

/** What database.id says: the database's id, and where that database was (null if unsaid). */
export interface SpoolDatabaseRecord {
  id: string;
  location: string | null;
}

/** The spool's database.id file: which database the journals in the directory belong to. */
export interface DatabaseIdStore {
  /** What the file says; null when there is none. Rejects when it cannot be read or holds no id. */
  read(): Promise<SpoolDatabaseRecord | null>;
  /** Writes `record` unless a file is there already; resolves with what the file says then. */
  create(record: SpoolDatabaseRecord): Promise<SpoolDatabaseRecord>;
  /** Writes `record` in place of whatever is there; resolves with what the file says then. */
  replace(record: SpoolDatabaseRecord): Promise<SpoolDatabaseRecord>;
}

/**
 * database.id on the real file system: the id on its first line, the location on its second.
 * It is written whole or not at all: a temp file, synced,
 * then put in place and the directory synced. A first claim is put in place with link(), which
 * fails when the name exists, not rename(), which would replace it: of two instances of two
 * databases that claim a new spool at once, one wins and the other reads the winner's id.
 */
export class DatabaseIdFile implements DatabaseIdStore {
  private readonly path: string;

  constructor(private readonly directory: string) {
    this.path = join(directory, DATABASE_ID_FILE);
  }

  async read(): Promise<SpoolDatabaseRecord | null> {
    let text: string;
    try {
      // Never through a symlink: the spool's files are its own.
      const handle = await open(this.path, constants.O_RDONLY | constants.O_NOFOLLOW);
      try {
        text = await handle.readFile('utf8');
      } finally {
        await handle.close();
      }
    } catch (error) {
      if (errorCode(error) === 'ENOENT') return null;
      throw error;
    }
    const [first, location] = text.split('\n');
    const id = first.trim();
    if (!DATABASE_ID.test(id)) throw new Error(`${DATABASE_ID_FILE} holds no database id`);
    return { id, location: location?.trim() || null };
  }

  async create(record: SpoolDatabaseRecord): Promise<SpoolDatabaseRecord> {
    const temp = await this.writeTemp(record);
    try {
      await link(temp, this.path);
    } catch (error) {
      if (errorCode(error) !== 'EEXIST') throw error;
    } finally {
      await unlink(temp).catch(() => undefined);
    }
    await syncDirectory(this.directory);
    return this.readBack();
  }

  async replace(record: SpoolDatabaseRecord): Promise<SpoolDatabaseRecord> {
    const temp = await this.writeTemp(record);
    try {
      await rename(temp, this.path);
    } catch (error) {
      await unlink(temp).catch(() => undefined);
      throw error;
    }
    await syncDirectory(this.directory);
    return this.readBack();
  }

  private async readBack(): Promise<SpoolDatabaseRecord> {
    const record = await this.read();
    if (record === null) throw new Error(`${DATABASE_ID_FILE} vanished as it was written`);
    return record;
  }

  private async writeTemp({ id, location }: SpoolDatabaseRecord): Promise<string> {
    const temp = join(
      this.directory,
      `${TEMP_PREFIX}database-id-${randomBytes(6).toString('hex')}`,
    );
    const handle = await open(temp, 'wx', FILE_MODE);
    try {
      // open() honours the umask; the mode must be exact.
      await handle.chmod(FILE_MODE);
      await handle.writeFile(`${id}\n${location ?? ''}\n`, 'utf8');
      await handle.sync();
    } catch (error) {
      await handle.close().catch(() => undefined);
      await unlink(temp).catch(() => undefined);
      throw error;
    }
    await handle.close();
    return temp;
  }
}
