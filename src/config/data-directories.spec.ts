import { mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkDataDirectories, type DirectoryFs } from './data-directories.js';
import { ScribeConfig } from './scribe-config.js';

function configOf(variables: Record<string, string>): ScribeConfig {
  return ScribeConfig.fromVariables(variables);
}

async function refusal(config: ScribeConfig, fs?: DirectoryFs): Promise<string> {
  const error: unknown = await checkDataDirectories(config, fs).then(
    () => new Error('accepted'),
    (refused: unknown) => refused,
  );
  expect(error).toMatchObject({ name: 'UnusableDirectoryError' });
  const message = (error as Error).message;
  expect(message).not.toContain('\n');
  return message;
}

const POSTGRES = 'postgres://scribe@127.0.0.1:1/none';

describe('checkDataDirectories', () => {
  let root: string;

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'scribe-dirs-'));
  });

  afterEach(() => rm(root, { recursive: true, force: true }));

  it('creates a missing data directory, its parents, and the spool in it (mode 0700)', async () => {
    const dataDir = join(root, 'a', 'b', 'data');
    await checkDataDirectories(configOf({ DATA_DIR: dataDir }));

    expect((await stat(dataDir)).isDirectory()).toBe(true);
    expect((await stat(join(dataDir, 'pending_messages'))).mode & 0o777).toBe(0o700);
  });

  it('takes directories that exist, and leaves their mode alone', async () => {
    await mkdir(join(root, 'pending_messages'), { mode: 0o750 });
    await checkDataDirectories(configOf({ DATA_DIR: root }));

    expect((await stat(join(root, 'pending_messages'))).mode & 0o777).toBe(0o750);
  });

  it('refuses a data directory that is a file: /dev/null', async () => {
    expect(await refusal(configOf({ DATA_DIR: '/dev/null' }))).toBe(
      'Scribe option dataDir (/dev/null): not a directory',
    );
  });

  it('refuses a data directory under a file, with the OS reason', async () => {
    await writeFile(join(root, 'file'), '');
    expect(await refusal(configOf({ DATA_DIR: join(root, 'file', 'data') }))).toBe(
      `Scribe option dataDir (${root}/file/data): ENOTDIR: not a directory, stat '${root}/file/data'`,
    );
  });

  // Node's recursive mkdir never settled there, and the start hung (the test's timeout would
  // end it); each level made alone fails at once.
  it('refuses at once a data directory that cannot be created: /proc/x', async () => {
    expect(await refusal(configOf({ DATA_DIR: '/proc/x' }))).toBe(
      "Scribe option dataDir (/proc/x): cannot be created (ENOENT: no such file or directory, mkdir '/proc/x')",
    );
  }, 5_000);

  it('refuses a SQLite file that is a directory', async () => {
    await mkdir(join(root, 'scribe.sqlite'));
    expect(await refusal(configOf({ DATA_DIR: root }))).toBe(
      `Scribe option dataDir (${root}): ${root}/scribe.sqlite is not a file`,
    );
  });

  it.each([
    ['at the database file', (root: string) => join(root, 'scribe.sqlite')],
    ['under the database file', (root: string) => join(root, 'scribe.sqlite', 'spool')],
    ['holding the database file', (root: string) => root],
  ])('refuses a spool directory %s, creating nothing', async (_case, spoolOf) => {
    const spoolDir = spoolOf(root);
    const database = join(root, 'scribe.sqlite');

    expect(await refusal(configOf({ DATA_DIR: root, SPOOL_DIR: spoolDir }))).toBe(
      `Scribe option spoolDir (${spoolDir}): holds or is held by the SQLite database ${database}: give the journal a folder of its own`,
    );
    await expect(stat(database)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('takes a spool directory beside the database file whose name begins with it', async () => {
    await checkDataDirectories(
      configOf({ DATA_DIR: root, SPOOL_DIR: join(root, 'scribe.sqlite-spool') }),
    );

    expect((await stat(join(root, 'scribe.sqlite-spool'))).isDirectory()).toBe(true);
  });

  it('refuses a spool directory that cannot be created where mkdir -p would hang', async () => {
    expect(await refusal(configOf({ DATA_DIR: root, SPOOL_DIR: '/proc/y' }))).toBe(
      "Scribe option spoolDir (/proc/y): cannot be created (ENOENT: no such file or directory, mkdir '/proc/y')",
    );
  });

  // The journal's to report: Scribe starts, answers BUFFERED, and takes the fix without a
  // restart (test/durability.e2e-spec.ts, an unusable on-disk spool).
  it('leaves a spool directory unusable otherwise to the journal', async () => {
    await writeFile(join(root, 'file'), '');
    await writeFile(join(root, 'pending_messages'), '');

    await expect(checkDataDirectories(configOf({ DATA_DIR: root }))).resolves.toBe(undefined);
    await expect(
      checkDataDirectories(configOf({ DATA_DIR: root, SPOOL_DIR: join(root, 'file', 'spool') })),
    ).resolves.toBe(undefined);
  });

  it("refuses the data directory as the default spool's parent with PostgreSQL too", async () => {
    expect(await refusal(configOf({ DATA_DIR: '/dev/null', DATABASE_URL: POSTGRES }))).toBe(
      'Scribe option dataDir (/dev/null): not a directory',
    );
  });

  it('leaves the data directory alone with PostgreSQL and a spool of its own', async () => {
    const dataDir = join(root, 'unused');
    await checkDataDirectories(
      configOf({ DATA_DIR: dataDir, DATABASE_URL: POSTGRES, SPOOL_DIR: join(root, 'spool') }),
    );

    await expect(stat(dataDir)).rejects.toMatchObject({ code: 'ENOENT' });
    expect((await stat(join(root, 'spool'))).isDirectory()).toBe(true);
  });

  it('refuses a directory this process may not write, with the OS reason', async () => {
    // As root, no mode refuses: the kernel's answer is faked.
    const fs: DirectoryFs = {
      stat,
      mkdir: (path, mode) => mkdir(path, { mode }),
      chmod: () => Promise.resolve(),
      access: () =>
        Promise.reject(
          Object.assign(new Error(`EACCES: permission denied, access '${root}'`), {
            code: 'EACCES',
          }),
        ),
    };
    expect(await refusal(configOf({ DATA_DIR: root }), fs)).toBe(
      `Scribe option dataDir (${root}): not writable (EACCES: permission denied, access '${root}')`,
    );
  });

  it('takes a level another instance made meanwhile', async () => {
    const dataDir = join(root, 'raced');
    const fs: DirectoryFs = {
      stat,
      mkdir: async (path, mode) => {
        await mkdir(path, { mode });
        throw Object.assign(new Error(`EEXIST: file already exists, mkdir '${path}'`), {
          code: 'EEXIST',
        });
      },
      chmod: () => Promise.resolve(),
      access: () => Promise.resolve(),
    };
    await expect(checkDataDirectories(configOf({ DATA_DIR: dataDir }), fs)).resolves.toBe(
      undefined,
    );
  });
});
