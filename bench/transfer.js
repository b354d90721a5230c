// Export and import of one long transcript: a session of TRANSFER_MESSAGES messages exported
// (JSONL), imported into an empty instance, and exported again; both files must be the same
// bytes. Prints each rate and the peak RSS of the server doing the work.
import { createHash } from 'node:crypto';
import http from 'node:http';
import { fillSession, mib, rssOf, sampleRss, startServer } from './lib.js';

const MESSAGES = Number(process.env.TRANSFER_MESSAGES ?? 100_000);

/** Streams GET `path` into a hash, counting bytes: the file is never held whole. */
function exportOf(url, path) {
  return new Promise((resolve, reject) => {
    http
      .get(`${url}${path}`, (response) => {
        if (response.statusCode !== 200)
          reject(new Error(`export answered ${response.statusCode}`));
        const hash = createHash('sha256');
        let bytes = 0;
        const chunks = [];
        response.on('data', (chunk) => {
          hash.update(chunk);
          bytes += chunk.length;
          chunks.push(chunk);
        });
        response.on('end', () =>
          resolve({ digest: hash.digest('hex'), bytes, body: Buffer.concat(chunks) }),
        );
        response.on('error', reject);
      })
      .on('error', reject);
  });
}

/** POSTs `body` to the import, 64 KiB a write, as a client streaming a file would. */
function importInto(url, sessionId, body) {
  return new Promise((resolve, reject) => {
    const request = http.request(
      `${url}/sessions/${sessionId}/import`,
      { method: 'POST', headers: { 'content-type': 'application/x-ndjson' } },
      (response) => {
        let text = '';
        response.on('data', (chunk) => (text += chunk));
        response.on('end', () =>
          response.statusCode === 200
            ? resolve(JSON.parse(text))
            : reject(new Error(`import answered ${response.statusCode}: ${text}`)),
        );
      },
    );
    request.on('error', reject);
    let at = 0;
    const write = () => {
      while (at < body.length) {
        const piece = body.subarray(at, at + 65536);
        at += piece.length;
        if (!request.write(piece)) return void request.once('drain', write);
      }
      request.end();
    };
    write();
  });
}

async function timed(pid, work) {
  const rss = sampleRss(pid);
  const started = process.hrtime.bigint();
  const result = await work();
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return { result, seconds, peak: await rss.stop() };
}

export async function transferRoundTrip(label, env = {}) {
  const source = await startServer(env);
  const target = await startServer(env);
  try {
    await fillSession(source.url, 'transfer', MESSAGES, 200);
    const idleRss = await rssOf(source.pid);
    const exported = await timed(source.pid, () =>
      exportOf(source.url, '/sessions/transfer/export'),
    );
    const imported = await timed(target.pid, () =>
      importInto(target.url, 'transfer', exported.result.body),
    );
    if (imported.result.statuses.PERSISTED !== MESSAGES) {
      throw new Error(`import stored ${JSON.stringify(imported.result)}`);
    }
    const again = await exportOf(target.url, '/sessions/transfer/export');
    const same = again.digest === exported.result.digest;
    const rate = (seconds) => `${Math.round(MESSAGES / seconds).toLocaleString('en')} msg/s`;
    console.log(`\nExport and import of ${MESSAGES.toLocaleString('en')} messages, ${label}:`);
    console.log(
      `  export  ${rate(exported.seconds).padStart(12)}  ${mib(exported.result.bytes)} in ${exported.seconds.toFixed(2)} s, server peak RSS ${mib(exported.peak)} (idle ${mib(idleRss)})`,
    );
    console.log(
      `  import  ${rate(imported.seconds).padStart(12)}  in ${imported.seconds.toFixed(2)} s, server peak RSS ${mib(imported.peak)}`,
    );
    console.log(`  round trip byte for byte: ${same ? 'yes' : 'NO'}`);
    if (!same) process.exitCode = 1;
  } finally {
    await source.stop();
    await target.stop();
  }
}
