import { type IrregularEntry } from './journal-files.js';

/** The spool directory (SPOOL_DIR): a string. */
export const SPOOL_DIRECTORY = Symbol('SPOOL_DIRECTORY');

/** The spool directory's file operations (JournalFiles): NodeJournalFiles in the app. */
export const JOURNAL_FILES = Symbol('JOURNAL_FILES');

/** The room one record may need on disk (a number): what readiness asks the file system for. */
export const SPOOL_RECORD_BYTES = Symbol('SPOOL_RECORD_BYTES');

/** Lists the symlinks, directories and the like in the spool directory, warning once each. */
export const SPOOL_IRREGULAR = Symbol('SPOOL_IRREGULAR');

export type IrregularEntries = () => Promise<IrregularEntry[]>;
