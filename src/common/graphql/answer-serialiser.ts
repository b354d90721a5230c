import { Logger } from '@nestjs/common';
import { describeError } from '../errors/describe-error.js';

/** The request an answer belongs to, until it is serialised. */
export interface AnswerOwner {
  requestId: string;
  /** Called once the answer is serialised (with its length), or failed to be (without). */
  done: (characters?: number) => void;
}

// Apollo hands stringifyResult a fresh object around the result's own `data`: that object is
// the key from willSendResponse to the serialisation of the same answer.
const owners = new WeakMap<object, AnswerOwner>();

/** Marks `data` as the answer of a request about to be serialised. */
export function awaitSerialisation(data: object, owner: AnswerOwner): void {
  owners.set(data, owner);
}

/** An answer that could not be turned into JSON; the client is told the request's id. */
export class AnswerSerialisationError extends Error {
  override readonly name = 'AnswerSerialisationError';
  constructor(readonly requestId: string | undefined) {
    super(
      `The answer could not be serialised${requestId ? ` (request ${requestId})` : ''}; the server logged why`,
    );
  }
}

/**
 * Apollo's `stringifyResult`, as its own (JSON and a newline), but a failure (an answer past
 * V8's longest string, say) is logged at ERROR with the request's id and answered as a JSON
 * error (Apollo's error response, HTTP 500), never a bare 500 without a line in the log.
 */
export function serialiseAnswer(
  logger: Pick<Logger, 'error'> = new Logger('GraphQLAnswers'),
): (value: unknown) => string {
  return (value) => {
    const data = (value as { data?: unknown } | null)?.data;
    const owner = typeof data === 'object' && data !== null ? owners.get(data) : undefined;
    let text: string | undefined;
    try {
      text = `${JSON.stringify(value)}\n`;
      return text;
    } catch (error) {
      logger.error(
        `Could not serialise the answer to request ${owner?.requestId ?? '(unknown)'}: ${describeError(error)}`,
        error instanceof Error ? error.stack : undefined,
      );
      throw new AnswerSerialisationError(owner?.requestId);
    } finally {
      owner?.done(text?.length);
    }
  };
}
