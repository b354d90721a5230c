import 'reflect-metadata';
import { Logger, type LogLevel } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { createRequire } from 'node:module';
import { type NestExpressApplication } from '@nestjs/platform-express';
import { ScribeModule } from './scribe.module.js';
import { LOG_LEVELS, type LogLevelName } from './config/run-settings.js';
import { describeError } from './common/errors/describe-error.js';
import { resolveScribeConfig } from './config/resolve-scribe-config.js';
import { type ScribeConfig } from './config/scribe-config.js';
import { type ScribeOptions } from './config/scribe-options.js';
import {
  scribeOptionsFromEnvironment,
  serveSettingsFromEnvironment,
  type ServeSettings,
} from './config/scribe-options-from-environment.js';
import { SafeConsoleLogger } from './common/logging/safe-console-logger.js';
import { startLines } from './config/start-lines.js';

/** Nest log levels from the most severe down to and including `level`. */
export function logLevelsUpTo(level: LogLevelName): LogLevel[] {
  return LOG_LEVELS.slice(0, LOG_LEVELS.indexOf(level) + 1);
}

async function bootstrap(): Promise<void> {
  let options: ScribeOptions;
  let serve: ServeSettings;
  let config: ScribeConfig;
  try {
    options = scribeOptionsFromEnvironment(process.env);
    serve = serveSettingsFromEnvironment(process.env);
    // Resolved here too, so that a bad value is refused in one line before Nest starts.
    config = resolveScribeConfig(options);
  } catch (error) {
    process.stderr.write(`scribe: invalid configuration: ${describeError(error)}\n`);
    process.exit(1);
  }
  const app = await NestFactory.create<NestExpressApplication>(ScribeModule.forRoot(options), {
    bodyParser: false,
    // Every line escaped as it is written: client bytes never forge a line or a terminal escape.
    // Colours only for a terminal, and never with NO_COLOR set (https://no-color.org).
    logger: new SafeConsoleLogger({
      logLevels: logLevelsUpTo(serve.logLevel),
      json: serve.logFormat === 'json',
      colors:
        serve.logFormat === 'text' &&
        process.stdout.isTTY === true &&
        process.stderr.isTTY === true &&
        !process.env.NO_COLOR,
    }),
    // Not return503OnClosing: its plain-text 503 would stand before Scribe's steps, which
    // answer GraphQL requests during shutdown with a JSON SERVICE_UNAVAILABLE error.
  });
  // Every answer of Scribe's own server is no-store (GraphQL's noStorePlugin, /metrics, an
  // export's stream): Express's default weak ETag would hash each body for a revalidation that
  // never comes, about 2% of a page read's CPU (npm run bench). The admin console's files, the
  // only answers cached, are revalidated by their Last-Modified. A host app keeps its setting.
  app.set('etag', false);
  app.enableShutdownHooks();
  await app.listen(serve.port, serve.host);
  const url = await app.getUrl();
  if (serve.anonymousForced) {
    new Logger('Scribe').warn(
      `ALLOW_ANONYMOUS=true on ${serve.host}: anonymous callers may read and append every session; configure API_TOKENS or a JWT key`,
    );
  }
  const { version } = createRequire(import.meta.url)('../package.json') as { version: string };
  for (const line of startLines({ version, config, url })) new Logger('Scribe').log(line);
}

bootstrap().catch((error: unknown) => {
  new Logger('Scribe').fatal(`Failed to start: ${describeError(error)}`);
  process.exit(1);
});
