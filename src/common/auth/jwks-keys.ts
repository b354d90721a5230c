import { Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  customFetch,
  errors,
  type FlattenedJWSInput,
  type CompactJWSHeaderParameters,
  type JWTVerifyGetKey,
  type RemoteJWKSet,
} from 'jose';

/** How often the keys are fetched again while tokens keep verifying with the ones held. */
export const JWKS_REFRESH_MS = 10 * 60_000;
/** How long one fetch of the key set may take. */
export const JWKS_FETCH_TIMEOUT_MS = 5000;
/** The largest key set read: a provider's holds a few keys, a few KiB. */
export const JWKS_MAX_BYTES = 1024 * 1024;

export interface JwksSource {
  readonly url: string;
  /** Least time between two fetches for a token naming a key not held (JWT_JWKS_COOLDOWN_MS). */
  readonly cooldownMs: number;
}

/** The key set could not be fetched at start: the start fails, naming the URL and why. */
export class JwksUnavailableError extends Error {
  constructor(url: string, cause: unknown) {
    super(`JWT_JWKS_URL ${url} did not answer with a key set: ${reasonOf(cause)}`, { cause });
    this.name = 'JwksUnavailableError';
  }
}

/**
 * The keys at JWT_JWKS_URL, the way OIDC providers rotate them: fetched at start (the start
 * fails when the URL does not answer with a key set), held, fetched again every JWKS_REFRESH_MS
 * and for a token naming a key not held, at most once per cooldown.
 *
 * jose's remote key set fetches (timeout, no redirects, the key set checked), and its local
 * one picks a key for a token; the schedule is this class's own, because jose's breaks two
 * promises. Once its cache is older than its max age, it fetches before verifying, and when
 * that fails, every token fails with it: the last good keys are not used while the provider is
 * down. And a failed fetch starts no cooldown, so tokens naming unknown keys fetch back to back
 * while it is down. Here jose's cache never ages (its set is only asked to reload); a fetch
 * that fails keeps the keys held, and the cooldown counts from the last try, failed or not.
 */
export class JwksKeys implements OnModuleInit, OnApplicationShutdown {
  private readonly remote: RemoteJWKSet;
  private local: JWTVerifyGetKey | undefined;
  private lastTry = -Infinity;
  private refreshing: Promise<void> | undefined;
  private failing = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly source: JwksSource,
    fetchImpl: typeof fetch = fetch,
    private readonly now: () => number = Date.now,
    private readonly logger: Pick<Logger, 'warn' | 'log'> = new Logger('Access'),
  ) {
    this.remote = createRemoteJWKSet(new URL(source.url), {
      timeoutDuration: JWKS_FETCH_TIMEOUT_MS,
      cacheMaxAge: Infinity,
      [customFetch]: cappedFetch(fetchImpl, JWKS_MAX_BYTES),
    });
  }

  async onModuleInit(): Promise<void> {
    try {
      await this.fetchKeys();
    } catch (error) {
      throw new JwksUnavailableError(this.source.url, error);
    }
    this.timer = setInterval(() => void this.refresh('scheduled'), JWKS_REFRESH_MS);
    this.timer.unref();
  }

  onApplicationShutdown(): void {
    clearInterval(this.timer);
  }

  /** The key a token's header names, for jose's jwtVerify. */
  readonly getKey: JWTVerifyGetKey = async (
    header: CompactJWSHeaderParameters,
    token: FlattenedJWSInput,
  ) => {
    const held = this.held();
    try {
      return await held(header, token);
    } catch (error) {
      if (!(error instanceof errors.JWKSNoMatchingKey)) throw error;
      // One fetch at a time, and none within the cooldown of the last: waits for one under way.
      if (!this.refreshing && this.now() - this.lastTry < this.source.cooldownMs) throw error;
      await this.refresh('a token names a key not held');
      return this.held()(header, token);
    }
  };

  /** Fetches the keys again, keeping those held when that fails (logged once a failing run). */
  refresh(why: string): Promise<void> {
    this.refreshing ??= this.fetchKeys()
      .then(
        () => {
          if (this.failing) this.logger.log(`JWT_JWKS_URL answers again: keys refreshed`);
          this.failing = false;
        },
        (error: unknown) => {
          if (!this.failing) {
            this.logger.warn(
              `Could not fetch JWT_JWKS_URL ${this.source.url} (${why}): ${reasonOf(error)}; keeping the keys fetched before`,
            );
          }
          this.failing = true;
        },
      )
      .finally(() => {
        this.refreshing = undefined;
      });
    return this.refreshing;
  }

  private held(): JWTVerifyGetKey {
    if (!this.local) throw new errors.JWKSNoMatchingKey('The key set has not been fetched');
    return this.local;
  }

  private async fetchKeys(): Promise<void> {
    this.lastTry = this.now();
    await this.remote.reload();
    const jwks = this.remote.jwks();
    if (!jwks) throw new errors.JWKSInvalid('No key set');
    this.local = createLocalJWKSet(jwks);
  }
}

/**
 * `fetchImpl`, but an answer's body is read as it comes and refused past `maxBytes`: jose reads
 * a key set whole and parses it, so an answer of 256 MiB (a provider, or the way to it, gone
 * wrong) would take that much memory and stall the process while parsed.
 */
export function cappedFetch(fetchImpl: typeof fetch, maxBytes: number): typeof fetch {
  return async (input, init) => {
    const response = await fetchImpl(input, init);
    const chunks: Uint8Array[] = [];
    let bytes = 0;
    // Leaving the loop (the throw) cancels the rest of the body.
    const body = response.body as AsyncIterable<Uint8Array> | null;
    for await (const chunk of body ?? []) {
      bytes += chunk.byteLength;
      if (bytes > maxBytes) throw new Error(`the key set is larger than ${maxBytes} bytes`);
      chunks.push(chunk);
    }
    return new Response(bytes === 0 ? null : Buffer.concat(chunks), {
      status: response.status,
      headers: response.headers,
    });
  };
}

/**
 * A fetch's failure in one line: jose's own words, or the network's with its cause's code.
 * Read by shape, not instanceof: fetch's errors may come from another realm (a VM context).
 */
function reasonOf(error: unknown): string {
  const { message, cause } = (error ?? {}) as { message?: unknown; cause?: { code?: unknown } };
  if (typeof message !== 'string') return String(error);
  const code = cause?.code;
  return typeof code === 'string' ? `${message} (${code})` : message;
}
