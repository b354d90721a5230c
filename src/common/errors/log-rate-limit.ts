import { LRUCache } from 'lru-cache';

// Sources remembered at once: an attacker with many addresses cannot grow this without bound.
const MAX_SOURCES = 10_000;

/** Whether to write a line now, and how many were held back since the last one. */
export interface LogTurn {
  write: boolean;
  suppressed: number;
}

/**
 * At most one log line per source per window, and at most `globalLines` per window over all
 * sources: a loop of bad requests, from one address or many, costs a handful of lines a
 * minute. The next line written for a source says how many were held back.
 */
export class LogRateLimit {
  private readonly sources = new LRUCache<string, { until: number; suppressed: number }>({
    max: MAX_SOURCES,
  });
  private globalUntil = 0;
  private globalWritten = 0;

  constructor(
    private readonly windowMs: number,
    private readonly globalLines: number,
    private readonly now: () => number = Date.now,
  ) {}

  take(source: string): LogTurn {
    const now = this.now();
    if (now >= this.globalUntil) {
      this.globalUntil = now + this.windowMs;
      this.globalWritten = 0;
    }
    const known = this.sources.get(source);
    if (known && now < known.until) {
      known.suppressed += 1;
      return { write: false, suppressed: known.suppressed };
    }
    const suppressed = known?.suppressed ?? 0;
    if (this.globalWritten >= this.globalLines) {
      this.sources.set(source, { until: known?.until ?? 0, suppressed: suppressed + 1 });
      return { write: false, suppressed: suppressed + 1 };
    }
    this.globalWritten += 1;
    this.sources.set(source, { until: now + this.windowMs, suppressed: 0 });
    return { write: true, suppressed };
  }
}
