import { accessSettings, accessVariablesOf } from './access-settings.js';
import { validateEnvironment, type Environment } from './environment.js';
import { InvalidEnvironmentError } from './invalid-environment.error.js';
import { type LogFormat, type LogLevelName } from './run-settings.js';
import { SCRIBE_OPTION_TABLE, setOptionAt } from './scribe-option-table.js';
import { type ScribeOptions } from './scribe-options.js';

// The one place Scribe reads environment variables (a lint rule keeps process.env out of the
// rest of src/): `npm start` and the tests turn them into ScribeOptions here, by the option
// table, and main.ts takes where to listen from serveSettingsFromEnvironment.

/** Where and how `npm start` listens: not module options, since a host listens itself. */
export interface ServeSettings {
  readonly port: number;
  readonly host: string;
  readonly logLevel: LogLevelName;
  readonly logFormat: LogFormat;
  /** Anonymous callers on a non-loopback address, because ALLOW_ANONYMOUS=true said so. */
  readonly anonymousForced: boolean;
}

/**
 * The ScribeOptions of an environment, checked by its rules (throws InvalidEnvironmentError, one
 * line naming the variable, as ever). It serves only Scribe, so its refusal gate guards every
 * path (`http.guardAllPaths`).
 */
export function scribeOptionsFromEnvironment(
  env: Record<string, string | undefined>,
): ScribeOptions {
  const environment = validateEnvironment(env);
  // Checked here, with HOST, at the point ScribeConfig checked it before: a module's host
  // listens itself, so resolveScribeConfig never sees the address.
  accessSettings(accessVariablesOf(environment, environment.HOST));
  const options: Record<string, unknown> = {};
  for (const [path, variable, kind] of SCRIBE_OPTION_TABLE) {
    const value = variable === undefined ? undefined : environment[variable];
    if (value === undefined) continue;
    // Empty is unset (validateEnvironment); only spaces would be refused as the option.
    if (typeof value === 'string' && value.trim() === '' && kind !== 'list') {
      throw new InvalidEnvironmentError(
        `${variable} must not be only spaces: leave it empty or unset for the default`,
      );
    }
    setOptionAt(options, path, optionValue(kind, value));
  }
  setOptionAt(options, 'http.guardAllPaths', true);
  return options;
}

/** PORT, HOST, LOG_LEVEL and LOG_FORMAT of an environment, checked as scribeOptionsFromEnvironment checks. */
export function serveSettingsFromEnvironment(
  env: Record<string, string | undefined>,
): ServeSettings {
  const environment = validateEnvironment(env);
  const access = accessSettings(accessVariablesOf(environment, environment.HOST));
  return {
    port: environment.PORT,
    host: environment.HOST,
    logLevel: environment.LOG_LEVEL,
    logFormat: environment.LOG_FORMAT,
    anonymousForced: access.anonymousForced,
  };
}

type VariableValue = Environment[keyof Environment];

function optionValue(
  kind: (typeof SCRIBE_OPTION_TABLE)[number][2],
  value: NonNullable<VariableValue>,
): unknown {
  switch (kind) {
    case 'boolean':
      return value === 'true';
    case 'development':
      return value === 'development';
    case 'list':
      // Each list's own rule checked its entries (environment-rules).
      return String(value)
        .split(',')
        .map((entry) => entry.trim())
        .filter((entry) => entry !== '');
    case 'proxy':
      return /^\d+$/.test(String(value)) ? Number(value) : value;
    default:
      return value;
  }
}
