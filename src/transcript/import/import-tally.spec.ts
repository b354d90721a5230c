import { ScribeErrorCode } from '../../common/errors/scribe-error-code.js';
import { AppendStatus } from '../../message/append-status.js';
import { ImportTally } from './import-tally.js';

describe(ImportTally.name, () => {
  it('counts each message by status, and by whether this import accepted it', () => {
    const tally = new ImportTally();
    tally.add([
      { status: AppendStatus.PERSISTED, accepted: true },
      { status: AppendStatus.QUEUED, accepted: true },
      { status: AppendStatus.PERSISTED, accepted: false },
    ]);
    tally.add([{ status: AppendStatus.BUFFERED, accepted: true }]);

    expect(tally.messages).toBe(4);
    expect(tally.allPersisted()).toBe(false);
    expect(tally.answer('s-1', false)).toEqual({
      sessionId: 's-1',
      messages: 4,
      accepted: 3,
      existing: 1,
      statuses: { PERSISTED: 2, QUEUED: 1, BUFFERED: 1 },
      status: AppendStatus.BUFFERED,
      sessionRestored: false,
    });
  });

  it('answers PERSISTED for an import of stored messages only, or of none', () => {
    const tally = new ImportTally();
    expect(tally.allPersisted()).toBe(true);
    expect(tally.answer('s-1', true)).toMatchObject({ status: 'PERSISTED', messages: 0 });
    tally.add([{ status: AppendStatus.PERSISTED, accepted: false }]);
    expect(tally.allPersisted()).toBe(true);
    expect(tally.answer('s-1', true)).toMatchObject({ status: 'PERSISTED', sessionRestored: true });
  });

  it('is not all persisted with one message queued, QUEUED the weakest', () => {
    const tally = new ImportTally();
    tally.add([
      { status: AppendStatus.PERSISTED, accepted: true },
      { status: AppendStatus.QUEUED, accepted: true },
    ]);
    expect(tally.allPersisted()).toBe(false);
    expect(tally.answer('s', false).status).toBe('QUEUED');
  });

  it('names the refused line from the field, and counts what came before it', () => {
    const tally = new ImportTally();
    tally.add([{ status: AppendStatus.PERSISTED, accepted: true }]);

    expect(
      tally.refusal(
        ScribeErrorCode.BadUserInput,
        'line 12.message.role: no',
        'line 12.message.role',
      ),
    ).toEqual({
      errors: [
        {
          message: 'line 12.message.role: no',
          extensions: { code: ScribeErrorCode.BadUserInput, line: 12 },
        },
      ],
      imported: {
        messages: 1,
        accepted: 1,
        existing: 0,
        statuses: { PERSISTED: 1, QUEUED: 0, BUFFERED: 0 },
      },
    });
    expect(
      tally.refusal(ScribeErrorCode.BadRequest, 'm', 'message 1').errors[0].extensions,
    ).toEqual({ code: ScribeErrorCode.BadRequest });
    expect(tally.refusal(ScribeErrorCode.BadRequest, 'm').errors[0].extensions).toEqual({
      code: ScribeErrorCode.BadRequest,
    });
    expect(
      tally.refusal(ScribeErrorCode.BadRequest, 'm', 'the line 3').errors[0].extensions,
    ).toEqual({ code: ScribeErrorCode.BadRequest });
  });
});
