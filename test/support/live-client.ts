import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';

/** A subscription's events as they arrive, and a way to wait for the n-th or the end. */
export interface Subscribed<T = any> {
  events: T[];
  /** The error it ended with, if it did (graphql-ws hands over the `error` payload). */
  error: unknown;
  completed: boolean;
  /** Resolves once `count` events have arrived, or it ended (then rejects). */
  received(count: number): Promise<T[]>;
  /** Resolves once it ended, with an error or not. */
  ended: Promise<void>;
  stop(): void;
}

/** A graphql-ws client of `url` that never reconnects by itself. */
export function liveClient(url: string, connectionParams?: Record<string, unknown>): Client {
  return createClient({
    url,
    webSocketImpl: WebSocket,
    retryAttempts: 0,
    lazy: true,
    ...(connectionParams ? { connectionParams } : {}),
  });
}

/** Subscribes and collects each event's `data[field]`. */
export function subscribe<T = any>(
  client: Client,
  query: string,
  variables: Record<string, unknown>,
  field: string,
): Subscribed<T> {
  const waiters: { count: number; resolve: (events: T[]) => void; reject: (e: unknown) => void }[] =
    [];
  let endedResolve!: () => void;
  const state: Subscribed<T> = {
    events: [],
    error: undefined,
    completed: false,
    ended: new Promise<void>((resolve) => (endedResolve = resolve)),
    received(count) {
      if (state.events.length >= count) return Promise.resolve(state.events.slice());
      if (state.completed || state.error !== undefined) {
        return Promise.reject(endedEarly(state, count));
      }
      return new Promise((resolve, reject) => waiters.push({ count, resolve, reject }));
    },
    stop: () => undefined,
  };
  const settle = () => {
    for (const waiter of waiters.splice(0)) {
      if (state.events.length >= waiter.count) waiter.resolve(state.events.slice());
      else waiter.reject(endedEarly(state, waiter.count));
    }
    endedResolve();
  };
  state.stop = client.subscribe<Record<string, T>>(
    { query, variables },
    {
      next: (value) => {
        if (value.errors) {
          state.error = value.errors;
          return;
        }
        state.events.push(value.data![field]);
        for (let index = waiters.length - 1; index >= 0; index--) {
          if (state.events.length >= waiters[index].count) {
            waiters[index].resolve(state.events.slice());
            waiters.splice(index, 1);
          }
        }
      },
      error: (error) => {
        state.error = error;
        settle();
      },
      complete: () => {
        state.completed = true;
        settle();
      },
    },
  );
  return state;
}

function endedEarly(state: Subscribed, count: number): Error {
  return new Error(
    `the subscription ended after ${state.events.length} of ${count} events: ${JSON.stringify(state.error)}`,
  );
}

/** The `extensions.code` of each error a subscription ended with. */
export function errorCodes(error: unknown): unknown[] {
  const list = Array.isArray(error) ? error : [error];
  return list.map((item: any) => item?.extensions?.code ?? item?.code ?? String(item));
}

/** Resolves once `predicate` holds, checking every few milliseconds; fails after `ms`. */
export async function eventually(predicate: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** A raw WebSocket on the graphql-transport-ws protocol, for what a well-behaved client never sends. */
export interface RawSocket {
  socket: WebSocket;
  messages: any[];
  /** The next message of `type` (already received or still to come). */
  next(type: string): Promise<any>;
  closed: Promise<{ code: number; reason: string }>;
  send(message: unknown): void;
}

export function rawSocket(
  url: string,
  options: WebSocket.ClientOptions = {},
  protocol = 'graphql-transport-ws',
): Promise<RawSocket> {
  const socket = new WebSocket(url, protocol, options);
  const messages: any[] = [];
  const waiting: { type: string; resolve: (message: any) => void }[] = [];
  const taken = new Set<any>();
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    socket.on('close', (code, reason) => resolve({ code, reason: reason.toString() })),
  );
  socket.on('message', (data) => {
    const message = JSON.parse((data as Buffer).toString());
    messages.push(message);
    const index = waiting.findIndex((waiter) => waiter.type === message.type);
    if (index >= 0) {
      taken.add(message);
      waiting.splice(index, 1)[0].resolve(message);
    }
  });
  return new Promise((resolve, reject) => {
    socket.once('error', reject);
    socket.once('unexpected-response', (_request, response) =>
      reject(new Error(`upgrade answered ${response.statusCode}`)),
    );
    socket.once('open', () =>
      resolve({
        socket,
        messages,
        closed,
        send: (message) => socket.send(JSON.stringify(message)),
        next(type) {
          const found = messages.find((message) => message.type === type && !taken.has(message));
          if (found) {
            taken.add(found);
            return Promise.resolve(found);
          }
          return new Promise((resolveMessage) => waiting.push({ type, resolve: resolveMessage }));
        },
      }),
    );
  });
}

/** The HTTP status an upgrade to `url` is answered with, when it is refused. */
export function refusedUpgrade(url: string, headers: Record<string, string> = {}): Promise<number> {
  const socket = new WebSocket(url, 'graphql-transport-ws', { headers });
  return new Promise((resolve, reject) => {
    socket.once('unexpected-response', (_request, response) => {
      resolve(response.statusCode ?? 0);
      socket.terminate();
    });
    socket.once('open', () => {
      socket.terminate();
      reject(new Error('the upgrade was accepted'));
    });
    socket.once('error', () => undefined);
  });
}
