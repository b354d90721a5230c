import * as scribe from './index.js';
import { ScribeErrorCode } from './common/errors/scribe-error-code.js';
import { ScribeException } from './common/errors/scribe.exception.js';
import { SessionLoader } from './session/session-loader.js';

// The package's entry, as a host imports it: what docs/nest-module.md tells a host to use.
describe('the public API (@scribe/server)', () => {
  it('exports the errors a host catches and the codes to compare them with', () => {
    expect(scribe.ScribeException).toBe(ScribeException);
    expect(scribe.ScribeErrorCode).toBe(ScribeErrorCode);
    const refused = new scribe.ScribeException(scribe.ScribeErrorCode.BadUserInput, 'bad', 'f');
    expect(refused.code).toBe('BAD_USER_INPUT');
  });

  it('exports the session loader token a host overrides', () => {
    expect(scribe.SessionLoader).toBe(SessionLoader);
  });
});
