import { type InjectionToken, type OnModuleInit, type Type } from '@nestjs/common';
import { type ModulesContainer } from '@nestjs/core';

const ONCE =
  'import ScribeModule.forRoot once, in the root module: its services are global, so other modules inject them without importing it';

/** Thrown at start when an app holds two Scribes: two forRoot (or forRootAsync) calls. */
export class ScribeImportedTwiceError extends Error {
  override readonly name = 'ScribeImportedTwiceError';

  constructor(count: number, sameOptions: boolean) {
    super(
      sameOptions
        ? `ScribeModule is imported more than once (${count} forRoot calls with the same options would start ${count} Scribes on one data directory); ${ONCE}`
        : `ScribeModule is imported more than once with different options (${count} forRoot calls); ${ONCE}`,
    );
  }
}

/**
 * Fails the start of an app that holds more than one instance of `configModule`. Each
 * ScribeModule.forRoot (or forRootAsync) call is its own dynamic module, and Nest keeps one of
 * several only when they are the same object imported twice: two host modules that each call
 * forRoot would otherwise start two global cores, two journals and two database connections,
 * and which one a host's provider is given would depend on the order of the imports.
 */
export class SingleScribe implements OnModuleInit {
  constructor(
    private readonly modules: ModulesContainer,
    private readonly configModule: Type,
    private readonly optionsToken: InjectionToken,
  ) {}

  onModuleInit(): void {
    const options: unknown[] = [];
    for (const module of this.modules.values()) {
      if (module.metatype !== this.configModule) continue;
      options.push(module.providers.get(this.optionsToken)?.instance);
    }
    if (options.length <= 1) return;
    // Options are plain JSON by now (checkOptionShape), so equal ones give equal text.
    throw new ScribeImportedTwiceError(
      options.length,
      new Set(options.map((given) => JSON.stringify(given))).size === 1,
    );
  }
}
