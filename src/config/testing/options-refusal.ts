import { resolveScribeConfig } from '../resolve-scribe-config.js';
import { InvalidScribeOptionsError } from '../invalid-scribe-options.error.js';
import { type ScribeOptions } from '../scribe-options.js';

/** The error resolveScribeConfig refuses `options` with; fails the test when it accepts them. */
export function optionsRefusal(options: unknown): InvalidScribeOptionsError {
  try {
    resolveScribeConfig(options as ScribeOptions);
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidScribeOptionsError);
    return error as InvalidScribeOptionsError;
  }
  throw new Error(`resolveScribeConfig accepted ${JSON.stringify(options)}`);
}
