import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { checkCombinations, plainVariables, refuseFirst } from './environment-rules.js';
import { AUTH_INTEGERS } from './auth-settings.js';
import { HTTP_INTEGERS } from './http-settings.js';
import { LIVE_INTEGERS } from './live-settings.js';
import { READ_LIMIT_INTEGERS } from './read-limit-settings.js';
import { RunSettings } from './run-settings.js';
import { STORE_INTEGERS } from './store-settings.js';

// The variables are declared by concern, one class a file, each extending the one before:
// store, read limits, live, HTTP, auth, run. The chain keeps the order they have always had, in
// Object.keys and in class-validator's errors, so that of two bad variables the same one is named.

/**
 * Every environment variable Scribe reads, with its default. Checked once at start;
 * a bad value stops the start with one line naming the variable.
 */
export class Environment extends RunSettings {}

const INTEGER_KEYS: ReadonlySet<string> = new Set([
  ...STORE_INTEGERS,
  ...READ_LIMIT_INTEGERS,
  ...LIVE_INTEGERS,
  ...HTTP_INTEGERS,
  ...AUTH_INTEGERS,
]);

/**
 * Turns the raw environment into an {@link Environment}. Empty strings count as unset;
 * integers must be written as plain decimal digits ("1e3" or "12abc" are refused).
 */
export function validateEnvironment(raw: Record<string, unknown>): Environment {
  // Every field, optional ones included, is an own property (ES2022 class fields).
  const known = Object.keys(new Environment());
  const environment = plainToInstance(Environment, plainVariables(raw, known, INTEGER_KEYS));
  refuseFirst(validateSync(environment, { skipMissingProperties: false }));
  checkCombinations(environment);
  return environment;
}
