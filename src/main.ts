import 'reflect-metadata';
import { Logger, type LogLevel } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { type NestExpressApplication } from '@nestjs/platform-express';
import { AppModule } from './app.module.js';
import { LOG_LEVELS, validateEnvironment, type Environment } from './config/environment.js';
import { describeError } from './common/errors/describe-error.js';
import { ScribeConfig } from './config/scribe-config.js';
import { SafeConsoleLogger } from './common/logging/safe-console-logger.js';

/** Nest log levels from the most severe down to and including `level`. */
export function logLevelsUpTo(level: Environment['LOG_LEVEL']): LogLevel[] {
  return LOG_LEVELS.slice(0, LOG_LEVELS.indexOf(level) + 1);
}

async function bootstrap(): Promise<void> {
  let environment: Environment;
  let config: ScribeConfig;
  try {
    environment = validateEnvironment(process.env);
    config = new ScribeConfig(environment);
  } catch (error) {
    process.stderr.write(`scribe: invalid configuration: ${describeError(error)}\n`);
    process.exit(1);
  }
  const app = await NestFactory.create<NestExpressApplication>(AppModule, {
    bodyParser: false,
    // Every line escaped as it is written: client bytes never forge a line or a terminal escape.
    logger: new SafeConsoleLogger({ logLevels: logLevelsUpTo(environment.LOG_LEVEL) }),
    return503OnClosing: true,
  });
  app.enableShutdownHooks();
  await app.listen(environment.PORT, environment.HOST);
  const url = await app.getUrl();
  if (config.access.anonymousForced) {
    new Logger('Scribe').warn(
      `ALLOW_ANONYMOUS=true on ${environment.HOST}: anonymous callers may read and append every session; configure API_TOKENS or a JWT key`,
    );
  }
  new Logger('Scribe').log(`GraphQL API ready at ${url.replace('[::1]', 'localhost')}/graphql`);
}

bootstrap().catch((error: unknown) => {
  new Logger('Scribe').fatal(`Failed to start: ${describeError(error)}`);
  process.exit(1);
});
