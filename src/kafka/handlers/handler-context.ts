/**
 * What every request handler works with: the store, the topic catalog, the cluster view, the held
 * Fetches, the notes on consumer-group members, the clock and the server's settings. One context
 * per server, built by the server and shared by all its connections.
 */
import type { OffsetStore } from '../../store.js';
import type { Clock } from '../../util/index.js';
import { TopicRegexResolver, type TopicCatalog } from '../catalog/index.js';
import type { ClusterView } from './cluster-view.js';
import type { ConsumerMemberDirectory } from './consumer-member-directory.js';
import { kafkaErrorCode } from './kafka-error-code.js';
import type { LongPolls } from './long-polls.js';

/** The settings handlers follow. */
export interface HandlerSettings {
  /** Create an unknown topic when a Metadata request asks for it and allows creation. */
  readonly autoCreateTopics: boolean;
  /** Partitions of an automatically created topic. */
  readonly defaultPartitions: number;
  /** The longest a Fetch is held, whatever max_wait_ms it asks for. */
  readonly fetchWaitMsMax: number;
}

/** Everything a handler needs; one per server. */
export class HandlerContext {
  /** The store the server serves. */
  readonly store: OffsetStore;
  /** Topics and the tables behind them. */
  readonly catalog: TopicCatalog;
  /** Who serves what. */
  readonly cluster: ClusterView;
  /** Notes on consumer-group members (subscribed names, client ids). */
  readonly members: ConsumerMemberDirectory;
  /** The topics of the catalog each subscription expression matches. */
  readonly topicRegexes: TopicRegexResolver;
  /** Fetches being held. */
  readonly longPolls: LongPolls;
  /** The server's clock. */
  readonly clock: Clock;
  /** The server's settings. */
  readonly settings: HandlerSettings;
  readonly #onWarning: (message: string) => void;

  constructor(
    fields: Omit<HandlerContext, 'errorCodeOf' | 'warn' | 'topicRegexes'> & {
      onWarning: (message: string) => void;
    },
  ) {
    this.store = fields.store;
    this.catalog = fields.catalog;
    this.cluster = fields.cluster;
    this.members = fields.members;
    this.topicRegexes = new TopicRegexResolver(fields.catalog);
    this.longPolls = fields.longPolls;
    this.clock = fields.clock;
    this.settings = fields.settings;
    this.#onWarning = fields.onWarning;
  }

  /**
   * The Kafka error code for an error a store call raised (kafka-error-code.ts). One that is not an
   * OffsetStoreError is a bug of this server: it is reported, and answered UNKNOWN_SERVER_ERROR.
   */
  errorCodeOf(error: unknown, what: string): number {
    const code = kafkaErrorCode(error);
    if (code === -1)
      this.warn(
        `${what} failed unexpectedly: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
      );
    return code;
  }

  /** Reports a problem the server survived (the server's onWarning; a throw from it is dropped). */
  warn(message: string): void {
    try {
      this.#onWarning(message);
    } catch {
      // The report is lost; the request it was about is answered all the same.
    }
  }
}
