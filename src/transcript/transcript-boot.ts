import { Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { describeError } from '../common/errors/describe-error.js';
import { ScribeConfig } from '../config/scribe-config.js';
import { DatabaseReadiness } from '../database/database-readiness.js';
import { StoredTimes } from '../database/stored-times.js';
import { OrderKeyGenerator } from '../message/order-key.js';
import { TranscriptRecovery } from './recovery.js';

/**
 * The write path's start: floors the order-key clock past everything an earlier run accepted,
 * replays what the journal holds, then starts the background retry. Its own provider, apart
 * from the write API (TranscriptService), which it has nothing to share with.
 */
@Injectable()
export class TranscriptBoot implements OnApplicationBootstrap {
  // Under the write API's name, as these lines have always been logged.
  private readonly logger = new Logger('TranscriptService');

  constructor(
    private readonly recovery: TranscriptRecovery,
    private readonly config: ScribeConfig,
    private readonly readiness: DatabaseReadiness,
    private readonly orderKeys: OrderKeyGenerator,
    private readonly storedTimes: StoredTimes,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    // Keys issued from now on sort after everything an earlier run accepted (stored, or in the
    // journal) and after every stored tombstone, whatever the wall clock says now.
    // Started during an outage, the stored times are read once the database is connected and
    // migrated; until then keys follow the journal and the wall clock.
    if (this.readiness.isReady) await this.floorFromStored();
    this.orderKeys.floor(await this.recovery.replayAtBoot());
    this.recovery.start();
    // What was journaled meanwhile is written back as soon as the database is up, not at the
    // next tick of the retry (and after the clock has moved past what is stored).
    if (!this.readiness.isReady) {
      void this.readiness.ready.then(async () => {
        await this.floorFromStored();
        this.recovery.trigger();
      });
    }
  }

  private async floorFromStored(): Promise<void> {
    try {
      this.orderKeys.floor(await this.storedTimes.latest());
    } catch (error) {
      // A database down at start: the journal's times still floor the clock, and each
      // write-back moves it past the session's tombstone (SessionEraser.prune).
      this.logger.warn(
        `Could not read the newest stored times at start (${describeError(error)}); order keys follow the journal and the wall clock`,
      );
      return;
    }
    const ahead = this.orderKeys.latest - this.orderKeys.wallNow();
    if (ahead > this.config.journalMaxClockAheadMs) {
      this.logger.warn(
        `The database holds times ${ahead} ms ahead of this clock (a clock that was ahead); new messages are timed after them, so that they sort after what is stored`,
      );
    }
  }
}
