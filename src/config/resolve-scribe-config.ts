import { validateEnvironment } from './environment.js';
import { InvalidEnvironmentError } from './invalid-environment.error.js';
import { integerBounds } from './integer-bounds.js';
import { InvalidScribeOptionsError } from './invalid-scribe-options.error.js';
import { ScribeConfig } from './scribe-config.js';
import { checkOptionShape, variablesOfOptions } from './scribe-option-shape.js';
import { OPTION_OF_VARIABLE, optionAt } from './scribe-option-table.js';
import { type ScribeOptions } from './scribe-options.js';

/**
 * The ScribeConfig of `options`, `{}` giving every default. The options are written as the
 * variables they stand for and checked by validateEnvironment, so that a host and `npm start`
 * obey one set of rules; a refusal names the option's path instead of the variable.
 */
export function resolveScribeConfig(options: ScribeOptions): ScribeConfig {
  checkOptionShape(options);
  try {
    return new ScribeConfig(validateEnvironment(variablesOfOptions(options)), {
      guardAllPaths: options.http?.guardAllPaths ?? false,
      serverDeadlines: options.http?.serverDeadlines ?? true,
    });
  } catch (error) {
    if (error instanceof InvalidEnvironmentError) throw optionErrorOf(error.message, options);
    throw error;
  }
}

const VARIABLE_NAME = /\b[A-Z][A-Z0-9_]*[A-Z0-9]\b/g;
// class-validator's wording of an integer's rules (IsInt, Min, Max), stated as its range instead.
const INTEGER_RULE = /^(must be an integer number|must not be (less|greater) than -?\d+)$/;

/** The refusal of a variable (one line, naming it first) reworded for the option it stands for. */
function optionErrorOf(message: string, options: ScribeOptions): InvalidScribeOptionsError {
  const named = [...message.matchAll(VARIABLE_NAME)]
    .map((match) => match[0])
    .find((name) => OPTION_OF_VARIABLE.has(name));
  const row = named === undefined ? undefined : OPTION_OF_VARIABLE.get(named);
  if (named === undefined || row === undefined)
    return new InvalidScribeOptionsError('(options)', message);
  const [path, , kind] = row;
  let reason = message.startsWith(`${named} `) ? message.slice(named.length + 1) : message;
  reason = reason.replace(VARIABLE_NAME, (name) => OPTION_OF_VARIABLE.get(name)?.[0] ?? name);
  reason = reason.charAt(0).toLowerCase() + reason.slice(1);
  const bounds = kind === 'integer' ? integerBounds(named) : undefined;
  if (bounds && INTEGER_RULE.test(reason)) {
    reason = `must be an integer between ${bounds.min} and ${bounds.max}`;
  }
  // A secret's value is never echoed: the error may be logged where the secret must not be.
  if (kind !== 'secret' && !/\bgot\b/.test(reason)) {
    reason += ` (got ${echoOf(optionAt(options, path))})`;
  }
  return new InvalidScribeOptionsError(path, reason);
}

/** A value as a refusal echoes it: JSON, but NaN and the infinities as themselves (not null). */
function echoOf(value: unknown): string {
  return typeof value === 'number' && !Number.isFinite(value)
    ? String(value)
    : JSON.stringify(value);
}
