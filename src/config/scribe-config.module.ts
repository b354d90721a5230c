import { Global, Module } from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { Environment, validateEnvironment } from './environment.js';
import { ScribeConfig } from './scribe-config.js';
import { ScribeInstance } from './scribe-instance.js';
import { Failpoints } from '../common/failpoints.js';
import { OrderKeyGenerator } from '../message/order-key.js';

@Global()
@Module({
  imports: [ConfigModule.forRoot({ ignoreEnvFile: true, validate: validateEnvironment })],
  providers: [
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
    {
      provide: ScribeConfig,
      inject: [ConfigService],
      useFactory: (config: ConfigService<Environment, true>) => {
        const environment = new Environment();
        const fields = environment as unknown as Record<string, unknown>;
        for (const key of Object.keys(environment) as (keyof Environment)[]) {
          fields[key] = config.get(key, { infer: true });
        }
        return new ScribeConfig(environment);
      },
    },
  ],
  exports: [ScribeConfig, ScribeInstance, Failpoints, OrderKeyGenerator],
})
export class ScribeConfigModule {}
