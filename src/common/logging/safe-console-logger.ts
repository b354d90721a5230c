import { ConsoleLogger, type LogLevel } from '@nestjs/common';
import { loggable, loggableStack } from './loggable.js';

/**
 * Nest's console logger, with every message and stack made safe to write (loggable): one
 * message is one line, whatever bytes a client put into it. Escaping here, where every line is
 * written, covers every logging path at once, a new one included; the places that log a value
 * a client chose also quote it, so that a reader sees where it begins and ends.
 */
export class SafeConsoleLogger extends ConsoleLogger {
  protected override printMessages(
    messages: unknown[],
    context?: string,
    logLevel?: LogLevel,
    writeStreamType?: 'stdout' | 'stderr',
    errorStack?: unknown,
    params?: Record<string, unknown>,
  ): void {
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

  // Nest calls it for every error and fatal line, with or without a stack.
  protected override printStackTrace(stack: string | undefined): void {
    super.printStackTrace(typeof stack === 'string' ? loggableStack(stack) : (stack as never));
  }
}
