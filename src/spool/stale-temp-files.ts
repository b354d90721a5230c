import { type JournalFiles } from './journal-files.js';
import { TEMP_PREFIX } from './segment-names.js';

// Leftover temp files (a crash during the writability check) are removed once this old.
export const TEMP_FILE_GRACE_MS = 60_000;

/** Removes the temp files a crash left behind; another process sharing the directory may be using a young one. */
export async function removeStaleTempFiles(
  files: JournalFiles,
  graceMs: number = TEMP_FILE_GRACE_MS,
): Promise<void> {
  for (const name of await files.list()) {
    if (!name.startsWith(TEMP_PREFIX)) continue;
    const age = await files.ageMs(name);
    if (age !== undefined && age >= graceMs) await files.remove(name);
  }
}
