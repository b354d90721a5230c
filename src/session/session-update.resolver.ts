import { Args, Mutation } from '@nestjs/graphql';
import { ScribeResolver } from '../common/graphql/scribe-resolver.js';
import { RequireScope } from '../common/auth/scope.guard.js';
import { ScribeErrorCode } from '../common/errors/scribe-error-code.js';
import { ScribeException } from '../common/errors/scribe.exception.js';
import { Session } from '../common/graphql/models/session.model.js';
import { toSessionModel } from '../common/graphql/session.mapper.js';
import { ScribeConfig } from '../config/scribe-config.js';
import { UpdateSessionInput, sessionChangesOf } from './dto/update-session.input.js';
import { SessionReader } from './session-reader.js';
import { type Unpiped } from '../common/validation/validation.pipe.js';

/**
 * `updateSession`: the one change of a session the API makes straight in the database (not
 * through the journal), apart from the reads of SessionResolver.
 */
@ScribeResolver()
export class SessionUpdateResolver {
  constructor(
    private readonly reader: SessionReader,
    private readonly config: ScribeConfig,
  ) {}

  @Mutation(() => Session, {
    description:
      "Sets a session's title and metadata, moving its revision on by one. With expectedRevision, only while the session is still at that revision (REVISION_CONFLICT otherwise, and nothing changes). NOT_FOUND for a session that does not exist.",
  })
  @RequireScope('append', 'input.id')
  async updateSession(
    @Args('input', {
      type: () => UpdateSessionInput,
      description: 'The session, the fields to change, and the revision expected.',
    })
    input: Unpiped<UpdateSessionInput>,
  ): Promise<Session> {
    const changes = sessionChangesOf(input, this.config.maxMessageBytes);
    const outcome = await this.reader.update(
      input.id,
      changes,
      input.expectedRevision ?? undefined,
    );
    // A caller without `read` learns only whether its own change was made: with an
    // expected revision, not whether the session exists nor the revision it is at.
    const expected = input.expectedRevision ?? undefined;
    const blind =
      expected === undefined
        ? undefined
        : new ScribeException(
            ScribeErrorCode.RevisionConflict,
            `input.expectedRevision: the session is not at revision ${expected}, or does not exist; nothing was changed`,
            'input.expectedRevision',
          );
    if (outcome.kind === 'not-found') {
      throw new ScribeException(
        ScribeErrorCode.NotFound,
        `input.id: no session ${JSON.stringify(input.id)}; a session is created by its first message`,
        'input.id',
        blind,
      );
    }
    if (outcome.kind === 'conflict') {
      throw new ScribeException(
        ScribeErrorCode.RevisionConflict,
        `input.expectedRevision: the session is at revision ${outcome.revision}, not ${input.expectedRevision}; nothing was changed. Read it again and retry.`,
        'input.expectedRevision',
        blind,
      );
    }
    return toSessionModel(outcome.session);
  }
}
