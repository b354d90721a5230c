import { type ModulesContainer } from '@nestjs/core';
import { ScribeImportedTwiceError, SingleScribe } from './single-scribe.js';

class ConfigModule {}
class OtherModule {}
const OPTIONS = Symbol('options');

/** A container of modules as Nest holds them: each its class and its providers' instances. */
function containerOf(...modules: [metatype: unknown, options?: unknown][]): ModulesContainer {
  return new Map(
    modules.map(([metatype, options], index) => [
      `module-${index}`,
      { metatype, providers: new Map([[OPTIONS, { instance: options }]]) },
    ]),
  ) as unknown as ModulesContainer;
}

const check = (container: ModulesContainer) =>
  new SingleScribe(container, ConfigModule, OPTIONS).onModuleInit();

describe(SingleScribe.name, () => {
  it('starts with one Scribe, whatever other modules there are', () => {
    expect(() =>
      check(containerOf([OtherModule, { a: 1 }], [ConfigModule, { dataDir: 'a' }], [OtherModule])),
    ).not.toThrow();
    expect(() => check(containerOf([OtherModule]))).not.toThrow();
  });

  it('refuses two with different options, saying how many', () => {
    const start = () =>
      check(
        containerOf(
          [ConfigModule, { dataDir: 'a' }],
          [OtherModule, { dataDir: 'b' }],
          [ConfigModule, { dataDir: 'b' }],
          [ConfigModule, { dataDir: 'a' }],
        ),
      );

    expect(start).toThrow(ScribeImportedTwiceError);
    expect(start).toThrow(
      'ScribeModule is imported more than once with different options (3 forRoot calls); import ScribeModule.forRoot once, in the root module: its services are global, so other modules inject them without importing it',
    );
  });

  it('refuses two with the same options: they would share one data directory', () => {
    expect(() =>
      check(containerOf([ConfigModule, { dataDir: 'a' }], [ConfigModule, { dataDir: 'a' }])),
    ).toThrow(
      'ScribeModule is imported more than once (2 forRoot calls with the same options would start 2 Scribes on one data directory); import ScribeModule.forRoot once',
    );
  });
});
