/**
 * A store and a Kafka server over it for tests: the store in a fresh temporary directory with 4
 * offsets-buckets, no background compaction and assignments computed at once; the server on
 * 127.0.0.1 port 0; both on one ManualClock unless a test passes its own (held Fetches, idle
 * connections and the store's timers then move only when the test advances it). The server's and
 * the store's warnings are collected, not emitted: a test asserts on them.
 */
import {
  ManualClock,
  OffsetStore,
  startKafkaServer,
  type Clock,
  type KafkaServer,
  type KafkaServerOptions,
  type OffsetStoreOptions,
} from '../../../src/index.js';
import { tempDir } from '../../support/temp-dir.js';

/** A running server and its store. */
export interface TestServer {
  readonly dir: string;
  readonly store: OffsetStore;
  readonly server: KafkaServer;
  readonly clock: Clock;
  /** Warnings of the server and the store, in order. */
  readonly warnings: string[];
  /** Closes the server and the store. */
  close(): Promise<void>;
}

/** Options of `startTestServer`. */
export interface TestServerOptions {
  /** The store directory (default: a fresh temporary one). */
  readonly dir?: string;
  /** The clock of both (default: a new ManualClock). */
  readonly clock?: Clock;
  /** Store options over the fixture's. */
  readonly store?: Partial<OffsetStoreOptions>;
  /** Server options over the fixture's. */
  readonly server?: Partial<Omit<KafkaServerOptions, 'store'>>;
}

/** Opens a store and starts a server over it. */
export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const dir = options.dir ?? tempDir();
  const clock = options.clock ?? new ManualClock();
  const warnings: string[] = [];
  const onWarning = (message: string) => warnings.push(message);
  const store = await OffsetStore.open({
    dir,
    bucketCount: 4,
    clock,
    onWarning,
    compaction: { strategy: 'none' },
    group: { assignmentIntervalMs: 0 },
    ...options.store,
  });
  let server: KafkaServer;
  try {
    server = await startKafkaServer({ store, clock, onWarning, ...options.server });
  } catch (error) {
    await store.close();
    throw error;
  }
  return { dir, store, server, clock, warnings, close: () => server.close({ closeStore: true }) };
}
