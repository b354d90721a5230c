import { IsIn, IsOptional, IsString, Matches } from 'class-validator';
import { AuthSettings } from './auth-settings.js';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'log', 'debug', 'verbose'] as const;
export type LogLevelName = (typeof LOG_LEVELS)[number];

/** How this process runs: its log level, GraphQL introspection, NODE_ENV, the test failpoint. */
export class RunSettings extends AuthSettings {
  @IsIn(LOG_LEVELS)
  LOG_LEVEL: LogLevelName = 'log';

  /** Whether `__schema` and `__type` are answered; unset: only with NODE_ENV=development. */
  @IsOptional()
  @IsIn(['true', 'false'])
  GRAPHQL_INTROSPECTION?: 'true' | 'false';

  /** Where the GraphQL endpoint is served: a path starting with `/`, without spaces. */
  @Matches(/^\/\S*$/, { message: 'GRAPHQL_PATH must start with / and hold no spaces' })
  GRAPHQL_PATH = '/graphql';

  @IsOptional()
  @IsString()
  NODE_ENV?: string;

  /**
   * Test-only: a place where this process kills itself with SIGKILL (`name` or `name@n`), for
   * the crash suite. Never set it in production.
   */
  @IsOptional()
  @Matches(/^[a-z][a-z0-9.-]*(@[1-9]\d*)?$/, {
    message: 'SCRIBE_FAILPOINT must be a failpoint name, optionally followed by @n',
  })
  SCRIBE_FAILPOINT?: string;
}
