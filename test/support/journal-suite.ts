import { chown, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { faultSuite, type FaultSuite } from './fault-helpers.js';
import { type ServerProcess } from './server-process.js';

// What the journal fault suites share: servers with an admin token, so that spoolStatus can be
// read, and a spool owned by the unprivileged user the server then runs as (root, who runs the
// tests, is not stopped by a file's mode; production's server is not root).

/** The user the server runs as where a file's mode must stop it: nobody. */
export const NOBODY = { uid: 65534, gid: 65534 };
/** The header that presents the admin token every server of a journal suite starts with. */
export const ADMIN = { authorization: 'Bearer t' };

/** spoolStatus { `selection` }, read as the admin; an answer with errors fails the test. */
export async function spoolStatusOf(target: ServerProcess, selection: string): Promise<any> {
  const response = await target.gql(`{ spoolStatus { ${selection} } }`, {}, ADMIN);
  expect(response.errors).toBeUndefined();
  return response.data.spoolStatus;
}

export interface JournalSuite extends FaultSuite {
  /** A data directory and its spool (pending_messages), both nobody's; removed after. */
  nobodysSpool: () => Promise<{ dataDir: string; spoolDir: string }>;
  /** A server on `dataDir` run as nobody, with the suite's settings under `env`; killed after. */
  startAsNobody: (dataDir: string, env?: Record<string, string>) => Promise<ServerProcess>;
}

/** A faultSuite whose servers carry the admin token, with the helpers to run them as nobody. */
export function journalSuite(
  timeoutMs: number,
  serverDefaults: Record<string, string> = {},
): JournalSuite {
  const suite = faultSuite(timeoutMs, { ADMIN_TOKEN: 't', ...serverDefaults });
  return {
    ...suite,
    nobodysSpool: async () => {
      const dataDir = await suite.dataDirectory();
      const spoolDir = join(dataDir, 'pending_messages');
      await mkdir(spoolDir, { mode: 0o700 });
      for (const path of [dataDir, spoolDir]) await chown(path, NOBODY.uid, NOBODY.gid);
      return { dataDir, spoolDir };
    },
    startAsNobody: (dataDir, env = {}) =>
      suite.server({ DATA_DIR: dataDir, ...env }, { runAs: NOBODY }),
  };
}
