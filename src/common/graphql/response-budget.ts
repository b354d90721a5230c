import { type BoundedSlots, type ReleaseSlot } from '../concurrency/bounded-slots.js';
import { ScribeErrorCode } from '../errors/scribe-error-code.js';
import { ScribeException } from '../errors/scribe.exception.js';

/** What one request's answer may grow to, and the slots large answers share. */
export interface ResponseBudgetLimits {
  maxBytes: number;
  largeBytes: number;
}

/** The refusal of an answer past `maxBytes`: QUERY_TOO_COMPLEX, naming the bound. */
export function responseTooLarge(maxBytes: number): ScribeException {
  return new ScribeException(
    ScribeErrorCode.QueryTooComplex,
    `The answer would be more than ${maxBytes} bytes (MAX_RESPONSE_BYTES): select fewer fields or aliases, or ask for smaller pages and follow their cursors`,
  );
}

/**
 * The bytes one request's answer may take, reserved by the resolvers before they read what
 * they answer (a page's stored sizes are known before its rows are read). Past `maxBytes` the
 * request is refused, and stays refused: the resolvers still running read nothing more, and the
 * answer is replaced by the one error. Past `largeBytes` it goes on only once it holds one of
 * the slots every large answer shares, so that a few of them are built at once, whatever the
 * number of requests.
 */
export class ResponseBudget {
  private reserved = 0;
  private refusal: ScribeException | undefined;
  private slot: Promise<ReleaseSlot | undefined> | undefined;
  private ended = false;

  constructor(
    private readonly limits: ResponseBudgetLimits,
    private readonly slots: BoundedSlots,
    /**
     * What stops the wait for a slot (the client went away). Asked for only when the answer
     * waits: most never do, and a signal costs every request that makes one.
     */
    private readonly signal?: () => AbortSignal | undefined,
  ) {}

  /** Bytes reserved so far. */
  get bytes(): number {
    return this.reserved;
  }

  /** The refusal, once the answer passed its bound. */
  get refused(): ScribeException | undefined {
    return this.refusal;
  }

  /** Reserves `bytes` (throws the refusal past the bound), waiting for a slot once large. */
  async admit(bytes: number): Promise<void> {
    this.charge(bytes);
    if (this.reserved <= this.limits.largeBytes) return;
    this.slot ??= this.slots.acquire(this.signal?.()).then((release) => {
      // A request that ended while it waited gives the slot straight back.
      if (release && this.ended) release();
      return release;
    });
    if ((await this.slot) === undefined) {
      throw new ScribeException(
        ScribeErrorCode.ResponseSlotTimeout,
        'The server is building other large answers; retry in a moment, or ask for smaller pages',
      );
    }
    // Refused while it waited (a sibling resolver passed the bound): read nothing more.
    if (this.refusal) throw this.refusal;
  }

  /** Reserves `bytes` of what is already in memory; throws the refusal past the bound. */
  charge(bytes: number): void {
    if (this.refusal) throw this.refusal;
    this.reserved += bytes;
    if (this.reserved > this.limits.maxBytes) {
      this.refusal = responseTooLarge(this.limits.maxBytes);
      throw this.refusal;
    }
  }

  /** The answer is written (or the request over): its slot, if any, is given back. */
  end(): void {
    this.ended = true;
    void this.slot?.then((release) => release?.());
  }
}
