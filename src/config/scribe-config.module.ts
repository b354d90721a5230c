import { ConfigurableModuleBuilder, Module } from '@nestjs/common';
import { ModulesContainer } from '@nestjs/core';
import { DataDirectories } from './data-directories.js';
import { ScribeConfig } from './scribe-config.js';
import { ScribeInstance } from './scribe-instance.js';
import { resolveScribeConfig } from './resolve-scribe-config.js';
import { type ScribeOptions } from './scribe-options.js';
import { SingleScribe } from './single-scribe.js';
import { SCRIBE_OPTIONS } from './tokens.js';
import { Failpoints } from '../common/failpoints.js';
import { OrderKeyGenerator } from '../message/order-key.js';

// forRoot(options) and forRootAsync({ imports, inject, useFactory }) come from Nest's builder;
// the options are provided under SCRIBE_OPTIONS, and everything else is derived from them.
const { ConfigurableModuleClass } = new ConfigurableModuleBuilder<ScribeOptions>({
  optionsInjectionToken: SCRIBE_OPTIONS,
})
  .setClassMethodName('forRoot')
  .setExtras({ isGlobal: true }, (definition, extras) => ({
    ...definition,
    global: extras.isGlobal,
  }))
  .build();

/** What ScribeConfigModule.forRoot takes: the options, and `isGlobal` (default true). */
export type ScribeConfigModuleOptions = Parameters<typeof ConfigurableModuleClass.forRoot>[0];
/** What ScribeConfigModule.forRootAsync takes: imports, inject, useFactory (or useClass…). */
export type ScribeConfigModuleAsyncOptions = Parameters<
  typeof ConfigurableModuleClass.forRootAsync
>[0];

/**
 * The validated configuration and the process-wide singletons every module injects: global
 * (unless `isGlobal: false`), so that no feature module imports it.
 */
@Module({
  providers: [
    {
      provide: ScribeConfig,
      inject: [SCRIBE_OPTIONS],
      useFactory: (options: ScribeOptions) => resolveScribeConfig(options),
    },
    { provide: ScribeInstance, useFactory: () => new ScribeInstance() },
    // The one clock of the process (see OrderKeyGenerator): every module that times or orders
    // messages and tombstones injects this one, so each moves it on for the others.
    {
      provide: OrderKeyGenerator,
      inject: [ScribeInstance],
      useFactory: (instance: ScribeInstance) => new OrderKeyGenerator(instance.id),
    },
    {
      provide: Failpoints,
      inject: [ScribeConfig],
      useFactory: (config: ScribeConfig) => new Failpoints(config.failpoint),
    },
    // Checks at module init. The module is global, and Nest inits global modules first: a bad
    // start fails here, before the database and the journal open anything.
    {
      provide: SingleScribe,
      inject: [ModulesContainer],
      useFactory: (modules: ModulesContainer) =>
        new SingleScribe(modules, ScribeConfigModule, SCRIBE_OPTIONS),
    },
    {
      provide: DataDirectories,
      inject: [ScribeConfig],
      useFactory: (config: ScribeConfig) => new DataDirectories(config),
    },
  ],
  exports: [SCRIBE_OPTIONS, ScribeConfig, ScribeInstance, Failpoints, OrderKeyGenerator],
})
export class ScribeConfigModule extends ConfigurableModuleClass {}
