import { jest } from '@jest/globals';

/**
 * What the process writes to stdout and stderr from now on, kept instead of printed (the spies
 * are restored by Jest's restoreMocks or jest.restoreAllMocks). `text()` reads it all so far.
 */
export function captureOutput(): { text: () => string } {
  let written = '';
  const capture = (chunk: string | Uint8Array) => {
    written += String(chunk);
    return true;
  };
  jest.spyOn(process.stdout, 'write').mockImplementation(capture);
  jest.spyOn(process.stderr, 'write').mockImplementation(capture);
  return { text: () => written };
}
