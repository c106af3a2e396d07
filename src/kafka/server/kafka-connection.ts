/**
 * One client connection: framing, pipelined requests answered strictly in order, backpressure,
 * idleness, and closing.
 *
 * Invariants:
 * - responses leave in request order, whatever order their handlers finish in: each request takes
 *   a slot at the tail of the connection's queue when it is dispatched, and only the head slot's
 *   response is written, so a long-polled Fetch holds the responses behind it on its connection (a
 *   client sends Fetches on a connection of their own) and nothing on other connections;
 * - a request starts only once the earlier requests of its connection are answered (Kafka's
 *   semantics: it sees their effects), except OffsetCommits pipelined behind OffsetCommits, which
 *   start at once and share the store's fdatasync (#mayDispatch);
 * - bounded memory: at most `inFlightRequestsMax` requests dispatched and not yet answered, at most
 *   about `pendingResponseBytesMax` of responses queued in the socket, and at most one partial frame
 *   plus one socket read buffered; past either bound the connection stops dispatching and stops
 *   reading from the socket (TCP then pushes back on the client) until responses drain. A complete
 *   request that must wait for the ones before it stops reading too, until it is dispatched. A client
 *   that never reads its responses, or that writes on behind a held request, therefore costs a
 *   bounded amount of memory;
 * - a frame over `requestBytesMax`, a request the router cannot answer, or a handler's
 *   CLOSE_CONNECTION closes the connection (the last in its turn, after earlier responses), and a
 *   request the router refuses at once (a version not served, a body that does not decode) ends
 *   what is read: nothing sent after it is dispatched, even behind commits still in flight; so
 *   does an answer written while the peer asks for it (`closeRequested`: a failed authentication);
 * - `close()` (server shutdown) dispatches nothing new, lets dispatched requests finish and their
 *   responses be written, then ends the socket: at once if the client is not reading them, else
 *   once the client closes too, or after `closeGraceMs` on the server's clock. Requests whose
 *   handlers hold their answer (a JoinGroup at the join barrier, a SyncGroup waiting for the
 *   leader) are told through the peer's `closing` signal, aborted on `close()` and when the socket
 *   closes, and answer at once, so neither a closing server nor a closed connection waits on them.
 *
 * A peer over its quota is muted (`mutedUntilMs`): the connection neither dispatches nor reads
 * until then, so the client is slowed and the server is not.
 *
 * Steps for each socket read: 1. buffer the chunk (FrameReader); 2. while under the bounds, cut out
 * the next complete payload and dispatch it: take a slot, route it, and fill the slot now (a
 * synchronous answer) or when its promise settles; 3. write every filled slot from the head, corked
 * into one syscall (after a settled promise, once the microtasks then running have run, so that
 * the commits of one fdatasync are answered in one write); 4. pause the socket if a bound is
 * reached, resume it when one is freed.
 */
import type { Socket } from 'node:net';
import type { Clock, Timer } from '../../util/index.js';
import { clientAddress } from '../security/client-address.js';
import { CLOSE_CONNECTION, type Peer } from '../handlers/index.js';
import { API_KEYS } from '../protocol/index.js';
import { FrameReader } from './frame-reader.js';
import type { RequestRouter, Routed } from './request-router.js';
import { elapsedMs, onNextTurn } from '../../util/index.js';

/** The bounds a connection keeps. */
export interface ConnectionLimits {
  /** Largest request payload; a bigger frame closes the connection unread. */
  readonly requestBytesMax: number;
  /** Most requests dispatched and not yet answered. */
  readonly inFlightRequestsMax: number;
  /** Bytes of responses queued in the socket above which reading stops until they drain. */
  readonly pendingResponseBytesMax: number;
  /** How long an ended connection waits for the client to close its side before it is destroyed. */
  readonly closeGraceMs: number;
}

/** What a connection holds now, for `KafkaServer.stats()`. */
export interface ConnectionStats {
  /** The client's address, as Kafka's clientHost writes it (`/127.0.0.1`). */
  readonly clientHost: string;
  /** Requests dispatched and not yet answered (at most inFlightRequestsMax). */
  readonly inFlightRequests: number;
  /** Bytes of responses written to the socket and not yet taken by the kernel. */
  readonly pendingResponseBytes: number;
  /** Bytes received and not yet dispatched (a partial frame, or frames held back by the bounds). */
  readonly bufferedRequestBytes: number;
  /** True while the connection is not read (a bound is reached). */
  readonly readPaused: boolean;
}

/** A response slot: empty until its request is answered. */
interface Slot {
  routed: Routed | undefined;
  /** Whether the request is an OffsetCommit (see #mayDispatch). */
  readonly commit: boolean;
}

/** One client connection of the server. */
export class KafkaConnection {
  readonly #socket: Socket;
  readonly #router: RequestRouter;
  readonly #limits: ConnectionLimits;
  readonly #clock: Clock;
  readonly #reader: FrameReader;
  readonly #peer: Peer;
  /** Aborted when the connection closes or starts closing (the peer's `closing`): held answers stop waiting. */
  readonly #heldAnswers = new AbortController();
  /** Dispatched requests, in order; the head is the next to be written. */
  readonly #slots: Slot[] = [];
  /** How many of #slots are OffsetCommits. */
  #commitSlots = 0;
  #writeBlocked = false;
  #readPaused = false;
  #closing = false;
  /** A dispatched request closes the connection once answered in turn: nothing after it is read. */
  #closeQueued = false;
  #ending = false;
  #closed = false;
  #graceTimer: Timer | undefined;
  #muteTimer: Timer | undefined;
  /** True for TLS sockets: see #onData. */
  readonly #coalesceReads: boolean;
  #pumpScheduled = false;
  /** A write of the answered head slots is due once the current microtasks have run. */
  #flushScheduled = false;
  #lastActivityMs: number;
  readonly #done: Promise<void>;

  /**
   * `peer`: makes who the client is (the server's security gives one per connection), given the
   * signal aborted when the connection closes; default an anonymous peer at the socket's address.
   */
  constructor(
    socket: Socket,
    router: RequestRouter,
    limits: ConnectionLimits,
    clock: Clock,
    peer?: (closing: AbortSignal) => Peer,
  ) {
    this.#socket = socket;
    this.#router = router;
    this.#limits = limits;
    this.#clock = clock;
    this.#reader = new FrameReader(limits.requestBytesMax);
    this.#peer = peer?.(this.#heldAnswers.signal) ?? {
      clientHost: `/${clientAddress(socket)}`,
      closing: this.#heldAnswers.signal,
    };
    this.#coalesceReads =
      'encrypted' in socket && (socket as { encrypted?: boolean }).encrypted === true;
    this.#lastActivityMs = elapsedMs(clock);
    this.#done = new Promise<void>((resolve) =>
      socket.once('close', () => {
        this.#closed = true;
        this.#heldAnswers.abort();
        this.#graceTimer?.cancel();
        this.#muteTimer?.cancel();
        this.#reader.clear();
        this.#slots.length = 0;
        this.#commitSlots = 0;
        resolve();
      }),
    );
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.#onData(chunk));
    socket.on('drain', () => this.#onDrain());
    // Reset connections and the like end in 'close'; an unhandled 'error' would crash the process.
    socket.on('error', () => {});
  }

  /** Resolves once the socket is closed. */
  get closed(): Promise<void> {
    return this.#done;
  }

  /** Requests dispatched and not yet written. */
  get inFlightCount(): number {
    return this.#slots.length;
  }

  /** What the connection holds now. */
  stats(): ConnectionStats {
    return {
      clientHost: this.#peer.clientHost,
      inFlightRequests: this.#slots.length,
      pendingResponseBytes: this.#socket.writableLength,
      bufferedRequestBytes: this.#reader.bufferedBytes,
      readPaused: this.#readPaused,
    };
  }

  /**
   * True when nothing is in flight and nothing happened for `idleMs` (the server then closes it);
   * `atMs` is the clock's interval time (`elapsedMs`).
   */
  isIdle(atMs: number, idleMs: number): boolean {
    return this.#slots.length === 0 && atMs - this.#lastActivityMs >= idleMs;
  }

  /** Closes at once, dropping whatever is in flight. */
  destroy(): void {
    this.#closing = true;
    this.#socket.destroy();
  }

  /**
   * Graceful close: no new requests are dispatched; dispatched ones finish and their responses are
   * written; then the connection ends (see #end). Resolves once closed.
   */
  close(): Promise<void> {
    if (!this.#closing) {
      this.#closing = true;
      this.#reader.clear();
      this.#pauseReading();
      this.#heldAnswers.abort();
      this.#finishIfDone();
    }
    return this.#done;
  }

  #onData(chunk: Buffer): void {
    if (this.#closing || this.#closeQueued) return;
    this.#lastActivityMs = elapsedMs(this.#clock);
    this.#reader.push(chunk);
    if (!this.#coalesceReads) {
      this.#pump();
    } else if (!this.#pumpScheduled) {
      // A TLS socket hands over one record (<= 16 KiB) per 'data' event, several per TCP read:
      // dispatching once they are all in lets pipelined commits share one fdatasync, as they do
      // over plain TCP, where one event carries the whole read.
      this.#pumpScheduled = true;
      onNextTurn(() => {
        this.#pumpScheduled = false;
        this.#pump();
      });
    }
  }

  /** Dispatches buffered requests while under the bounds; pauses or resumes reading to match. */
  #pump(): void {
    if (this.#muted()) return;
    // A complete request that must wait for the ones before it (behind a held Fetch or JoinGroup,
    // say): reading stops until it is dispatched, or the client could fill the buffer without bound.
    let waiting = false;
    while (
      !this.#closing &&
      !this.#closeQueued &&
      !this.#writeBlocked &&
      this.#slots.length < this.#limits.inFlightRequestsMax
    ) {
      let payload: Buffer | null;
      try {
        payload = this.#reader.peek(this.#peer.requestBytesMax?.());
      } catch {
        // A frame size outside [0, requestBytesMax] (lower before authentication): closed without
        // reading it.
        this.destroy();
        return;
      }
      if (payload === null) break;
      if (!this.#mayDispatch(payload)) {
        waiting = true;
        break;
      }
      this.#reader.consume();
      this.#dispatch(payload);
    }
    if (this.#closing || this.#closeQueued) return;
    if (waiting || this.#writeBlocked || this.#slots.length >= this.#limits.inFlightRequestsMax)
      this.#pauseReading();
    else this.#resumeReading();
  }

  /**
   * Whether a request may start now. As in Kafka, a request starts only once every earlier request
   * of its connection is answered, so it sees all their effects (a fetch after a commit sees the
   * commit; a commit after the Metadata that created its topic finds the topic). The exception is
   * an OffsetCommit behind OffsetCommits only: those start at once, so the commits a client
   * pipelines share one fdatasync (the store appends them in arrival order, so the last one of a
   * partition still wins).
   */
  #mayDispatch(payload: Buffer): boolean {
    if (this.#slots.length === 0) return true;
    if (this.#commitSlots !== this.#slots.length) return false;
    return isCommit(payload);
  }

  #dispatch(payload: Buffer): void {
    const slot: Slot = { routed: undefined, commit: isCommit(payload) };
    if (slot.commit) this.#commitSlots++;
    this.#slots.push(slot);
    const routed = this.#router.route(payload, this.#peer);
    if (routed instanceof Promise) {
      // The router answers failures itself (CLOSE_CONNECTION); a rejection getting past it still
      // closes the connection rather than leaving the slot, and every request behind it, unanswered.
      routed.then(
        (result) => this.#fill(slot, result),
        () => this.#fill(slot, CLOSE_CONNECTION),
      );
    } else {
      slot.routed = routed;
      // A request that closes the connection ends what is read from it, even behind commits still
      // in flight: nothing the client sent after it is dispatched (Kafka reads one request at a
      // time and closes before the next). The connection closes once the slots before it are
      // answered.
      if (routed === CLOSE_CONNECTION) this.#stopReadingAt();
      if (this.#slots[0] === slot) this.#flush();
    }
  }

  /** A request of this connection closes it: drop what follows it, read no more. */
  #stopReadingAt(): void {
    this.#closeQueued = true;
    this.#reader.clear();
    this.#pauseReading();
  }

  #fill(slot: Slot, routed: Routed): void {
    slot.routed = routed;
    if (this.#slots[0] !== slot || this.#flushScheduled) return;
    // The commits of one fdatasync settle one after another in the same run of microtasks: writing
    // once they all have lets their responses leave in one write instead of one write each.
    this.#flushScheduled = true;
    process.nextTick(() => {
      this.#flushScheduled = false;
      this.#flush();
      this.#pump();
    });
  }

  /** Writes the answered slots from the head, in one corked burst. */
  #flush(): void {
    if (this.#ending || this.#closed) return;
    const socket = this.#socket;
    let corked = false;
    while (this.#slots.length > 0 && this.#slots[0]!.routed !== undefined) {
      const slot = this.#slots.shift()!;
      if (slot.commit) this.#commitSlots--;
      const routed = slot.routed!;
      if (routed === CLOSE_CONNECTION) {
        if (corked) socket.uncork();
        this.#closing = true;
        this.#slots.length = 0;
        this.#commitSlots = 0;
        this.#end();
        return;
      }
      if (!corked && this.#slots.length > 0 && this.#slots[0]!.routed !== undefined) {
        socket.cork();
        corked = true;
      }
      socket.write(routed);
      if (this.#peer.closeRequested === true) {
        // A failed authentication: its answer goes out, then the connection ends (Kafka's behaviour).
        if (corked) socket.uncork();
        this.#closing = true;
        this.#slots.length = 0;
        this.#commitSlots = 0;
        this.#end();
        return;
      }
    }
    if (corked) socket.uncork();
    this.#lastActivityMs = elapsedMs(this.#clock);
    // Blocked only once a write asked for a 'drain' (writableNeedDrain): below the socket's
    // high-water mark none would come, and a limit under it (Node 22's is 64 KiB) would block the
    // connection for good once its client caught up.
    if (socket.writableLength > this.#limits.pendingResponseBytesMax && socket.writableNeedDrain)
      this.#writeBlocked = true;
    this.#finishIfDone();
  }

  #onDrain(): void {
    if (!this.#writeBlocked) return;
    this.#writeBlocked = false;
    this.#pump();
  }

  /** While closing: once nothing is in flight, ends the connection. */
  #finishIfDone(): void {
    if (this.#closing && !this.#closed && this.#slots.length === 0) this.#end();
  }

  /**
   * Ends the connection after the responses written so far: destroyed at once when they are stuck
   * (the client is not reading); otherwise a FIN follows them, what the client still sends is read
   * and dropped (closing with unread input would send a reset, which can cost the client the last
   * responses), and the socket is destroyed when the client closes too or `closeGraceMs` passes.
   */
  #end(): void {
    if (this.#ending || this.#closed) return;
    this.#ending = true;
    if (this.#writeBlocked) {
      this.#socket.destroy();
      return;
    }
    this.#socket.end();
    this.#resumeReading();
    this.#graceTimer = this.#clock.setTimer(this.#limits.closeGraceMs, () =>
      this.#socket.destroy(),
    );
  }

  /**
   * True while the peer is muted for going over its quota (`peer.mutedUntilMs`, KIP-219): nothing is
   * dispatched and the socket is not read until then; a timer on the server's clock pumps again.
   */
  #muted(): boolean {
    const untilMs = this.#peer.mutedUntilMs;
    if (untilMs === undefined || this.#closing) return false;
    const waitMs = untilMs - elapsedMs(this.#clock);
    if (waitMs <= 0) return false;
    this.#pauseReading();
    if (this.#muteTimer === undefined) {
      this.#muteTimer = this.#clock.setTimer(waitMs, () => {
        this.#muteTimer = undefined;
        this.#pump();
      });
    }
    return true;
  }

  #pauseReading(): void {
    if (this.#readPaused) return;
    this.#readPaused = true;
    this.#socket.pause();
  }

  #resumeReading(): void {
    if (!this.#readPaused) return;
    this.#readPaused = false;
    this.#socket.resume();
  }
}

/** Whether a request payload is an OffsetCommit (its first two bytes are the API key). */
function isCommit(payload: Buffer): boolean {
  return payload.length >= 2 && payload.readInt16BE(0) === API_KEYS.OffsetCommit;
}
