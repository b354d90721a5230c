import { type Request } from 'express';

/** The address a request came from, for logs (Express's `ip`, or the socket's). */
export function sourceOf(request: Request | undefined): string {
  return request?.ip ?? request?.socket?.remoteAddress ?? '?';
}
