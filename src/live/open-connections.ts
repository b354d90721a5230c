import { Inject, Injectable } from '@nestjs/common';
import { type WebSocket } from 'ws';
import { type LiveConnection } from './live-connection.js';
import { PRINCIPAL_SLOTS } from './live.tokens.js';
import { type SlotCounts } from './slot-counts.js';
import { within } from './within.js';

/**
 * Which LiveConnection each open socket is, and when the subscriptions of all of them have
 * ended. Its own provider because two sides need it: the socket server opens and closes
 * connections and waits for them at shutdown, and the graphql-ws handlers (LiveOperations) find
 * the connection an operation arrived on and end its subscriptions.
 */
@Injectable()
export class OpenConnections {
  private readonly connections = new WeakMap<WebSocket, LiveConnection>();
  private settled: (() => void) | undefined;

  constructor(
    /** Every principal's running subscriptions on this instance. */
    @Inject(PRINCIPAL_SLOTS) private readonly principals: SlotCounts,
  ) {}

  /** `socket` is this connection from now on. */
  add(socket: WebSocket, connection: LiveConnection): void {
    this.connections.set(socket, connection);
  }

  /** The connection of a socket added. */
  of(socket: WebSocket): LiveConnection {
    return this.connections.get(socket) as LiveConnection;
  }

  /** A subscription or a connection ended: settles allEnded when none runs any more. */
  settleIfDone(): void {
    if (this.principals.total === 0) this.settled?.();
  }

  /** Resolves once every subscription has ended, or after `ms`. */
  allEnded(ms: number): Promise<void> {
    if (this.principals.total === 0) return Promise.resolve();
    return within(ms, new Promise<void>((resolve) => (this.settled = resolve)));
  }
}
