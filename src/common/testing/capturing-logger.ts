import { type LoggerService } from '@nestjs/common';

export interface LogLine {
  level: string;
  message: unknown;
  params: unknown[];
}

/**
 * Keeps what Nest's Logger would print, for a spec to read and the console to be spared:
 * `Logger.overrideLogger(logs)` before, `Logger.overrideLogger(new ConsoleLogger())` after.
 */
export class CapturingLogger implements LoggerService {
  readonly lines: LogLine[] = [];

  /** The messages logged at `level`, in order. */
  messages(level: string): unknown[] {
    return this.lines.filter((line) => line.level === level).map((line) => line.message);
  }

  log(message: unknown, ...params: unknown[]): void {
    this.lines.push({ level: 'log', message, params });
  }

  error(message: unknown, ...params: unknown[]): void {
    this.lines.push({ level: 'error', message, params });
  }

  warn(message: unknown, ...params: unknown[]): void {
    this.lines.push({ level: 'warn', message, params });
  }

  debug(message: unknown, ...params: unknown[]): void {
    this.lines.push({ level: 'debug', message, params });
  }

  verbose(message: unknown, ...params: unknown[]): void {
    this.lines.push({ level: 'verbose', message, params });
  }

  fatal(message: unknown, ...params: unknown[]): void {
    this.lines.push({ level: 'fatal', message, params });
  }
}
