import { HeaderMap } from '@apollo/server';
import { noStorePlugin } from './no-store.plugin.js';

/** The headers of an answer once the plugin has seen it, from `headers` as they were. */
async function headersAfter(headers: HeaderMap): Promise<HeaderMap> {
  const listener = await noStorePlugin().requestDidStart!({} as never);
  await listener!.willSendResponse!({ response: { http: { headers } } } as never);
  return headers;
}

describe(noStorePlugin.name, () => {
  it('says no-store on an answer', async () => {
    expect((await headersAfter(new HeaderMap())).get('cache-control')).toBe('no-store');
  });

  it('overrides a cacheable policy a resolver or another plugin set', async () => {
    const headers = new HeaderMap([['cache-control', 'max-age=60, public']]);
    expect((await headersAfter(headers)).get('cache-control')).toBe('no-store');
    const zeroAge = new HeaderMap([['cache-control', 'max-age=0, private']]);
    expect((await headersAfter(zeroAge)).get('cache-control')).toBe('no-store');
  });

  it("keeps a header Apollo's plugin would not read, as a persisted query's miss sends", async () => {
    const miss = 'private, no-cache, must-revalidate';
    const headers = new HeaderMap([['cache-control', miss]]);
    expect((await headersAfter(headers)).get('cache-control')).toBe(miss);
    const stored = new HeaderMap([['cache-control', 'no-store']]);
    expect((await headersAfter(stored)).get('cache-control')).toBe('no-store');
    const longer = new HeaderMap([['cache-control', 'max-age=60, public, immutable']]);
    expect((await headersAfter(longer)).get('cache-control')).toBe('max-age=60, public, immutable');
  });

  it('leaves the other headers as they are', async () => {
    const headers = await headersAfter(new HeaderMap([['x-request-id', 'r-1']]));
    expect([...headers.entries()]).toEqual([
      ['x-request-id', 'r-1'],
      ['cache-control', 'no-store'],
    ]);
  });
});
