import { DatabaseNotReadyError, DatabaseReadiness } from './database-readiness.js';
import { MessageStore, type SessionWrite, type WrittenSession } from './message-store.js';
import { ReadyMessageStore } from './ready-message-store.js';

class SwitchedReadiness extends DatabaseReadiness {
  isReady = false;
  private open: () => void = () => undefined;
  readonly ready = new Promise<void>((resolve) => (this.open = resolve));

  becomeReady(): void {
    this.isReady = true;
    this.open();
  }

  protected waitingFor(): string | null {
    return 'ECONNREFUSED';
  }
}

class RecordingStore extends MessageStore {
  readonly calls: string[] = [];
  connections?: number;

  override get concurrentWrites(): number {
    return this.connections ?? super.concurrentWrites;
  }

  async write(writes: SessionWrite[]): Promise<WrittenSession[]> {
    this.calls.push(`write ${writes.length}`);
    return writes.map(() => ({ inserted: [], skipped: [], revision: null }));
  }

  async heartbeat(): Promise<void> {
    this.calls.push('heartbeat');
  }

  async onModuleInit(): Promise<void> {
    this.calls.push('init');
  }

  async onApplicationShutdown(signal?: string): Promise<void> {
    this.calls.push(`shutdown ${signal}`);
  }
}

const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

describe(ReadyMessageStore.name, () => {
  it('runs as many writes at once as the store it guards, and a store runs one unless it says', () => {
    const store = new RecordingStore();
    const sut = new ReadyMessageStore(store, new SwitchedReadiness());

    expect(sut.concurrentWrites).toBe(1);
    store.connections = 3;
    expect(sut.concurrentWrites).toBe(3);
  });

  it('refuses writes and heartbeats as an outage until the database is ready, then passes them on', async () => {
    const readiness = new SwitchedReadiness();
    const store = new RecordingStore();
    const sut = new ReadyMessageStore(store, readiness);
    sut.onModuleInit();
    await settle();

    await expect(sut.write([{ sessionId: 's', records: [] }])).rejects.toBeInstanceOf(
      DatabaseNotReadyError,
    );
    await expect(sut.heartbeat()).rejects.toBeInstanceOf(DatabaseNotReadyError);
    expect(store.calls).toEqual([]);

    readiness.becomeReady();
    await settle();

    expect(store.calls).toEqual(['init']);
    await expect(sut.write([{ sessionId: 's', records: [] }])).resolves.toEqual([
      { inserted: [], skipped: [], revision: null },
    ]);
    await sut.heartbeat();
    await sut.onApplicationShutdown('SIGTERM');
    expect(store.calls).toEqual(['init', 'write 1', 'heartbeat', 'shutdown SIGTERM']);
  });

  it('closes the store at shutdown though the database never came up', async () => {
    const store = new RecordingStore();
    const sut = new ReadyMessageStore(store, new SwitchedReadiness());
    sut.onModuleInit();

    await sut.onApplicationShutdown();
    await settle();

    expect(store.calls).toEqual(['shutdown undefined']);
  });

  it('works with a store without lifecycle hooks', async () => {
    const bare = new (class extends MessageStore {
      write = async () => [];
      heartbeat = async () => undefined;
    })();
    const readiness = new SwitchedReadiness();
    readiness.becomeReady();
    const sut = new ReadyMessageStore(bare, readiness);
    sut.onModuleInit();
    await settle();
    await expect(sut.onApplicationShutdown()).resolves.toBeUndefined();
  });
});
