import { InvalidScribeOptionsError } from './invalid-scribe-options.error.js';
import { BLANK_DIRECTORY } from './store-settings.js';
import { SCRIBE_OPTION_TABLE, optionAt, type OptionKind } from './scribe-option-table.js';

// The shape of a ScribeOptions object, checked before its values are: no key the table does not
// know (a typo would otherwise be silently ignored and its default used), and each value of its
// option's type. The values' rules are Environment's, applied afterwards (resolveScribeConfig).

const KINDS: ReadonlyMap<string, OptionKind> = new Map(
  SCRIBE_OPTION_TABLE.map(([path, , kind]) => [path, kind]),
);
const GROUPS: ReadonlySet<string> = new Set(
  SCRIBE_OPTION_TABLE.flatMap(([path]) => (path.includes('.') ? [path.split('.')[0]] : [])),
);

/** Throws InvalidScribeOptionsError at the first unknown key or wrongly typed value. */
export function checkOptionShape(options: unknown): void {
  if (!isPlainObject(options)) {
    throw new InvalidScribeOptionsError('(root)', `must be an object (got ${typeName(options)})`);
  }
  checkGroup(options, '');
}

function checkGroup(group: Record<string, unknown>, prefix: string): void {
  for (const [key, value] of Object.entries(group)) {
    const path = prefix + key;
    if (prefix === '' && GROUPS.has(key)) {
      if (value === undefined) continue;
      if (!isPlainObject(value)) {
        throw new InvalidScribeOptionsError(path, `must be an object (got ${typeName(value)})`);
      }
      checkGroup(value, `${path}.`);
      continue;
    }
    const kind = KINDS.get(path);
    if (kind === undefined) throw new InvalidScribeOptionsError(path, 'is not a Scribe option');
    if (value !== undefined && !hasKindType(kind, value)) {
      throw new InvalidScribeOptionsError(
        path,
        `must be ${KIND_TYPES[kind]} (got ${typeName(value)})`,
      );
    }
    const blank = blankProblem(kind, value);
    if (blank !== undefined) throw new InvalidScribeOptionsError(path, blank);
  }
}

/**
 * Why a value is refused for being empty or only spaces, if it is. validateEnvironment reads an
 * empty variable as unset: passed on, '' would silently mean the default (SQLite for
 * database.url, anonymous access for the auth secrets, /graphql for graphql.path).
 */
function blankProblem(kind: OptionKind, value: unknown): string | undefined {
  if (kind === 'list' && Array.isArray(value) && value.some(isBlank)) {
    return `must not list an empty value or one of only spaces (got ${JSON.stringify(value)})`;
  }
  if (!isBlank(value)) return undefined;
  switch (kind) {
    case 'directory':
      return `${BLANK_DIRECTORY} (got ${JSON.stringify(value)})`;
    case 'secret':
      // A secret's value is never echoed, not even a blank one.
      return 'must not be empty or only spaces: leave it out for the default';
    default:
      return `must not be empty or only spaces: leave it out for the default (got ${JSON.stringify(value)})`;
  }
}

function isBlank(value: unknown): boolean {
  return typeof value === 'string' && value.trim() === '';
}

const KIND_TYPES: Record<OptionKind, string> = {
  integer: 'a number',
  string: 'a string',
  directory: 'a string',
  secret: 'a string',
  boolean: 'a boolean',
  development: 'a boolean',
  list: 'an array of strings',
  proxy: 'false, a number or a string',
  mode: "'own' or 'host'",
};

function hasKindType(kind: OptionKind, value: unknown): boolean {
  switch (kind) {
    case 'integer':
      return typeof value === 'number';
    case 'string':
    case 'directory':
    case 'secret':
      return typeof value === 'string';
    case 'boolean':
    case 'development':
      return typeof value === 'boolean';
    case 'list':
      return Array.isArray(value) && value.every((entry) => typeof entry === 'string');
    case 'proxy':
      return value === false || typeof value === 'number' || typeof value === 'string';
    case 'mode':
      return value === 'own' || value === 'host';
  }
}

/**
 * The options as raw variables for validateEnvironment, each under its variable: numbers stay
 * numbers (validateEnvironment takes them as read), the others are written as the variable is.
 */
export function variablesOfOptions(options: object): Record<string, unknown> {
  const variables: Record<string, unknown> = {};
  for (const [path, variable, kind] of SCRIBE_OPTION_TABLE) {
    const value = optionAt(options, path);
    if (variable === undefined || value === undefined) continue;
    if (kind === 'development') {
      if (value === true) variables[variable] = 'development';
    } else if (kind === 'boolean') {
      variables[variable] = value ? 'true' : 'false';
    } else if (kind === 'list') {
      variables[variable] = (value as string[]).join(',');
    } else if (kind === 'proxy') {
      // false: no proxy, as TRUST_PROXY unset.
      if (typeof value === 'number' || typeof value === 'string')
        variables[variable] = String(value);
    } else {
      variables[variable] = value;
    }
  }
  return variables;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  // Object.prototype of any realm (a vm context, Jest's sandbox) counts, not only this one's.
  const prototype = Object.getPrototypeOf(value) as object | null;
  return prototype === null || Object.getPrototypeOf(prototype) === null;
}

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value;
}
