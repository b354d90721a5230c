import { type ServerProcess } from './server-process.js';

/** What /health says, in the few words the disk suites compare: its HTTP status and states. */
export interface Health {
  http: number;
  status: string;
  database: string;
  spool: string;
}

/** Reads /health once; a missing part reads as undefined, so that a comparison names it. */
export async function health(target: ServerProcess): Promise<Health> {
  const response = await target.get('/health');
  return {
    http: response.status,
    status: response.body?.status,
    database: response.body?.details?.database?.status,
    spool: response.body?.details?.spool?.status,
  };
}
