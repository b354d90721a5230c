import { startTcpProxy, type TcpProxy } from '../../src/kit/tcp-proxy.js';
import { TEST_DATABASE_URL, createPostgresSchema } from './databases.js';

/**
 * A schema of its own on the test PostgreSQL behind a TCP proxy that can cut it: `url` goes
 * through the proxy (for the server), `directUrl` around it (for the test's own reads). Both
 * are dropped and closed by `cleanups`.
 */
export async function proxiedPostgresSchema(cleanups: {
  add(step: () => Promise<unknown>): void;
}): Promise<{ proxy: TcpProxy; url: string; directUrl: string }> {
  const schema = await createPostgresSchema();
  cleanups.add(schema.drop);
  const target = new URL(TEST_DATABASE_URL as string);
  const proxy = await startTcpProxy(Number(target.port || 5432), target.hostname);
  cleanups.add(() => proxy.close());
  const url = new URL(schema.url);
  url.hostname = '127.0.0.1';
  url.port = String(proxy.port);
  return { proxy, url: url.toString(), directUrl: schema.url };
}
