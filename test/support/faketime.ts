import { existsSync } from 'node:fs';

// Debian's faketime package puts the preload library here. A missing library is not an error
// to the loader (it prints a warning and runs the program with the real clock), so a suite
// that fakes time would pass without any skew: every use goes through fakeClockEnv, which
// refuses to run without it.
const LIBFAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';

/**
 * The environment that runs a server under libfaketime. With `file`, the offset is read from
 * that file on every clock read (FAKETIME_NO_CACHE), so a test steps a running server's clock
 * by writing it; with `offset` (`+3600`, `-1h`), the offset is fixed. Only the wall clock moves:
 * Node's timers run on the monotonic clock, which a step back would otherwise freeze.
 */
export function fakeClockEnv(clock: { file: string } | { offset: string }): Record<string, string> {
  if (!existsSync(LIBFAKETIME)) {
    throw new Error(`${LIBFAKETIME} is missing: install libfaketime (Debian: faketime)`);
  }
  return {
    LD_PRELOAD: LIBFAKETIME,
    FAKETIME_DONT_FAKE_MONOTONIC: '1',
    ...('file' in clock
      ? { FAKETIME_TIMESTAMP_FILE: clock.file, FAKETIME_NO_CACHE: '1' }
      : { FAKETIME: clock.offset }),
  };
}
