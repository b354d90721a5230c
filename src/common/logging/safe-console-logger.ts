import { ConsoleLogger, type ConsoleLoggerOptions, type LogLevel } from '@nestjs/common';
import { loggable, loggableStack } from './loggable.js';
import { currentRequestId } from './request-context.js';

// Nest's own lines at start (modules loaded, routes mapped, "successfully started"): about
// 27 of them, for someone debugging Nest's wiring, not for an operator. Demoted to debug.
const NEST_START_CONTEXTS: ReadonlySet<string> = new Set([
  'NestFactory',
  'InstanceLoader',
  'RoutesResolver',
  'RouterExplorer',
  'NestApplication',
  'GraphQLModule',
]);

// What JSON.stringify leaves as it is but a terminal or a log viewer would not: DEL and the C1
// controls (0x9B is an 8-bit CSI), the Unicode line and paragraph separators. Only ever inside
// a JSON string, where \uXXXX means the same character.
const JSON_UNSAFE = /[\u007f-\u009f\u2028\u2029]/g;
const jsonEscape = (character: string) =>
  `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`;

/** A log line in the JSON format: one object a line, these fields first. */
export interface JsonLogLine {
  time: string;
  level: LogLevel;
  context: string | null;
  message: unknown;
  /** null outside a request's work (start-up, background retries). */
  requestId: string | null;
  pid: number;
  stack?: unknown;
  [more: string]: unknown;
}

/**
 * Nest's console logger, with every line safe to write: one message is one line whatever
 * bytes a client put into it. In the text format every message and stack is made loggable;
 * in the JSON format (`json: true`), JSON's escaping does it, and the few characters it leaves
 * as they are are escaped too. Escaping here, where every line is written, covers every
 * logging path at once, a new one included; the places that log a value a client chose also
 * quote it, so that a reader sees where it begins and ends.
 *
 * Why Nest's ConsoleLogger and not pino (nestjs-pino, pino-http): its `json` option already
 * writes one object a line, every Logger call in Scribe and in Nest goes through it unchanged,
 * and no dependency or second logging path is added; what Scribe needs on top (ISO times, the
 * request id, the escaping, quiet start-up) is a few overrides here. A host that prefers pino
 * installs its own logger, and Scribe's lines go to it (see docs/operating.md, Logs).
 *
 * Both formats carry the id of the request whose work wrote the line (currentRequestId), an
 * ISO time, and no colour unless asked for (`colors`, which main.ts sets for a terminal only).
 */
export class SafeConsoleLogger extends ConsoleLogger {
  constructor(options: ConsoleLoggerOptions = {}) {
    super(
      options.json
        ? // One object a line: never inspect()'s layout, never colours.
          { prefix: 'Scribe', ...options, colors: false, compact: true }
        : { prefix: 'Scribe', ...options },
    );
  }

  override log(message: unknown, ...optionalParams: unknown[]): void {
    const context = optionalParams.at(-1) ?? this.context;
    if (typeof context === 'string' && NEST_START_CONTEXTS.has(context)) {
      this.debug(message, ...optionalParams);
      return;
    }
    super.log(message, ...optionalParams);
  }

  protected override printMessages(
    messages: unknown[],
    context?: string,
    logLevel?: LogLevel,
    writeStreamType?: 'stdout' | 'stderr',
    errorStack?: unknown,
    params?: Record<string, unknown>,
  ): void {
    if (this.options.json) {
      super.printMessages(messages, context, logLevel, writeStreamType, errorStack, params);
      return;
    }
    super.printMessages(
      messages.map((message) => {
        const resolved = this.resolveMessage(message);
        return typeof resolved === 'string' ? loggable(resolved) : resolved;
      }),
      context,
      logLevel,
      writeStreamType,
      typeof errorStack === 'string' ? loggableStack(errorStack) : errorStack,
      params,
    );
  }

  // Nest calls it for every error and fatal line, with or without a stack (text only).
  protected override printStackTrace(stack: string | undefined): void {
    super.printStackTrace(typeof stack === 'string' ? loggableStack(stack) : (stack as never));
  }

  // ISO 8601 in UTC, not the locale's AM/PM: sortable, and the same as the JSON format's.
  protected override getTimestamp(): string {
    return new Date().toISOString();
  }

  // The text format's request id, after the context: `[Context] [request <id>] message`.
  protected override formatContext(context: string): string {
    const requestId = currentRequestId();
    const formatted = super.formatContext(context);
    return requestId === undefined ? formatted : `${formatted}[request ${requestId}] `;
  }

  // Nest's record (epoch `timestamp`, fields in its order) as Scribe's JsonLogLine.
  protected override stringifyJsonLogObject(logObject: Record<string, unknown>): string {
    const { timestamp, level, context, message, pid, ...rest } = logObject;
    const line: JsonLogLine = {
      time: new Date(timestamp as number).toISOString(),
      level: level as LogLevel,
      context: (context as string | undefined) ?? null,
      message,
      requestId: currentRequestId() ?? null,
      pid: pid as number,
      ...rest,
    };
    return super.stringifyJsonLogObject(line).replace(JSON_UNSAFE, jsonEscape);
  }
}
