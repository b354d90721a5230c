import { type ChildProcess } from 'node:child_process';
import request from 'supertest';
import { type SentMessage } from './crash-checker.js';
import { processEnd, within } from './crash-process.js';
import { APPEND, type AppendStatus } from './fault-helpers.js';

/**
 * The parts of a crash run, in order; each client sends its share of each in turn. A fault run
 * may add an outage to the clean restart (restart-outage), before its after-restart appends.
 */
export type Phase = 'healthy' | 'outage' | 'recovery' | 'restart-outage' | 'after-restart';

/** A running server a client talks to; dead once killed. */
export interface AppendTarget {
  url: string;
  child: ChildProcess;
}

export interface WorkloadMessage extends SentMessage {
  phase: Phase;
}

// An append waits at most this long for its answer (one may wait out a database timeout).
const ANSWER_TIMEOUT_MS = 30_000;
// After a transport error, how long the server gets to be seen dead before the error counts.
const DEATH_TIMEOUT_MS = 10_000;

/**
 * One client per session, strictly sequential: it sends a message, waits for the answer, then
 * sends the next, so its send order is the session's acceptance order. Every message has a
 * client id and content of its own. A request that fails because the server died (it was in
 * flight at a kill) has no answer; the client stops there until it is told to go on.
 */
export class SequentialClient {
  readonly sent: WorkloadMessage[] = [];
  /** Sends so far, retries included: a send's place in the session's send order. */
  private sends = 0;

  constructor(
    readonly sessionId: string,
    private readonly onAnswer: (phase: Phase, status: AppendStatus) => void,
  ) {}

  /** Sends up to `count` new messages; false once the server is gone. */
  async sendNew(target: AppendTarget, phase: Phase, count: number): Promise<boolean> {
    for (let index = 0; index < count; index++) {
      const number = this.sent.length + 1;
      const message: WorkloadMessage = {
        sessionId: this.sessionId,
        clientMessageId: `${this.sessionId}-m${number}`,
        content: `${this.sessionId} message ${number} (${phase})`,
        sends: [],
        phase,
        answer: null,
      };
      this.sent.push(message);
      if (!(await this.send(target, message, phase))) return false;
    }
    return true;
  }

  /**
   * Sends again, with the same client id, every message that got no answer (a client's retry).
   * Each retry is a send of its own, after every send before it: the message may be accepted
   * there, after messages sent since its first send (crash-checker.ts).
   */
  async resendUnanswered(target: AppendTarget, phase: Phase): Promise<boolean> {
    for (const message of this.sent) {
      if (message.answer === null && !(await this.send(target, message, phase))) return false;
    }
    return true;
  }

  private async send(
    target: AppendTarget,
    message: WorkloadMessage,
    phase: Phase,
  ): Promise<boolean> {
    message.sends.push(++this.sends);
    let response: request.Response;
    try {
      response = await request(target.url)
        .post('/graphql')
        .set('content-type', 'application/json')
        .timeout({ response: ANSWER_TIMEOUT_MS })
        .send({
          query: APPEND,
          variables: {
            input: {
              sessionId: message.sessionId,
              role: 'USER',
              content: message.content,
              clientMessageId: message.clientMessageId,
            },
          },
        });
    } catch (error) {
      // The server died with the request in flight (or refused it dead): no answer, no promise.
      await within(
        processEnd(target.child),
        DEATH_TIMEOUT_MS,
        `append of ${message.clientMessageId} failed (${String(error)}) and the server did not die`,
      );
      return false;
    }
    const body = response.body as {
      data?: { appendMessage?: { status: AppendStatus; message: { id: string } } };
    };
    const answer = body?.data?.appendMessage;
    if (!answer) {
      throw new Error(
        `append of ${message.clientMessageId} answered ${response.status}: ${JSON.stringify(response.body)}`,
      );
    }
    message.answer = { status: answer.status, id: answer.message.id };
    this.onAnswer(phase, answer.status);
    return true;
  }
}

/**
 * The clients of a run, one per session, and the answers they got per phase. `onAnswer` sees
 * each answer as it arrives, with the count of its phase so far: an external kill is triggered
 * from there, with other clients' requests in flight.
 */
export class Workload {
  readonly clients: SequentialClient[];
  private readonly answers = new Map<Phase, AppendStatus[]>();
  onAnswer: (phase: Phase, answersInPhase: number) => void = () => undefined;

  constructor(sessionIds: string[]) {
    this.clients = sessionIds.map(
      (sessionId) =>
        new SequentialClient(sessionId, (phase, status) => {
          const answers = this.answers.get(phase) ?? [];
          answers.push(status);
          this.answers.set(phase, answers);
          this.onAnswer(phase, answers.length);
        }),
    );
  }

  /** Every client sends `count` messages of `phase`, the clients at once; until done or the server dies. */
  async run(target: AppendTarget, phase: Phase, count: number): Promise<void> {
    await Promise.all(this.clients.map((client) => client.sendNew(target, phase, count)));
  }

  /** Every client sends again what got no answer; the answers count in `phase`. */
  async resendUnanswered(target: AppendTarget, phase: Phase): Promise<void> {
    await Promise.all(this.clients.map((client) => client.resendUnanswered(target, phase)));
  }

  /** The statuses answered in `phase`, in arrival order. */
  statuses(phase: Phase): AppendStatus[] {
    return this.answers.get(phase) ?? [];
  }

  /** Every message sent, each session's in send order. */
  sent(): WorkloadMessage[] {
    return this.clients.flatMap((client) => client.sent);
  }
}
