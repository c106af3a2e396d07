/**
 * The audit log: one JSON object a line, appended to a file named by the server's options, for
 * every request refused on security grounds (failed or refused authentication, an ACL denial) and
 * every administrative request (DeleteGroups, OffsetDelete, successful authentications), whoever
 * made it.
 *
 * | field      | meaning                                                              |
 * |------------|----------------------------------------------------------------------|
 * | time       | ISO 8601 time on the server's clock                                  |
 * | principal  | who (`User:alice`, `User:ANONYMOUS`); for a failed login the name tried is `user` |
 * | clientHost | the client's address (`/127.0.0.1`)                                  |
 * | listener   | the listener's name                                                  |
 * | api        | the API (`OffsetCommit`, `SaslAuthenticate`, ...)                    |
 * | resource   | `Group:<id>` or `Topic:<name>` when one is concerned                 |
 * | operation  | the ACL operation checked (`Read`, `Describe`, `Delete`)             |
 * | outcome    | `allowed` or `denied`                                                |
 * | reason     | why, in words                                                        |
 *
 * Writes go through the store's file-system port, in order, one at a time, appended at the file's
 * end (lines are written to the OS, not fdatasynced one by one; `close()` fdatasyncs).
 *
 * Bounds, so that a flood (a client that never authenticates, or one refused on thousands of
 * resources in one request) can grow neither the server's memory nor the disk without limit:
 * - every text field is cut to FIELD_CHARS_MAX characters (a user name of a megabyte is logged as
 *   its first 256 characters and its length);
 * - at most PENDING_LINES_MAX lines and PENDING_BYTES_MAX bytes wait to be written;
 * - denials are written at most DENIALS_PER_SECOND a second (a token bucket on the server's clock),
 *   of each kind apart: refusals of a resource (an ACL denial) and the others (refused logins and
 *   connections), so that clients that never authenticate, which can be refused as fast as they
 *   connect, cannot crowd the ACL denials of authenticated principals out of the log;
 * past a bound lines are dropped and counted, and the count is written as a line of its own
 * (`droppedLines`) once the queue drains.
 *
 * Rotation: before each write the file's size is compared with where this log would write; when
 * they differ (logrotate's copytruncate emptied it, or it was renamed away, with or without a new
 * file in its place) the path is opened again and writing goes on at its end, so no line lands
 * behind a run of zeros or in a rotated file.
 *
 * A failed write is reported once (onWarning) and the log stops: the server goes on serving.
 */
import { OffsetStoreError } from '../../errors/index.js';
import type { FileHandle, FileSystem } from '../../io/index.js';

/** One audited event. */
export interface AuditEvent {
  readonly principal: string;
  readonly clientHost: string;
  readonly listener: string;
  readonly api: string;
  readonly resource?: string;
  readonly operation?: string;
  readonly outcome: 'allowed' | 'denied';
  readonly reason?: string;
  /** For a failed login: the user name tried. */
  readonly user?: string;
}

const PENDING_LINES_MAX = 10_000;
const PENDING_BYTES_MAX = 8 * 1024 * 1024;
const FIELD_CHARS_MAX = 256;
const DENIALS_PER_SECOND = 1000;

/** `text` cut to FIELD_CHARS_MAX characters, saying how long it was. */
function bounded(text: string): string {
  return text.length <= FIELD_CHARS_MAX
    ? text
    : `${text.slice(0, FIELD_CHARS_MAX)}... (${text.length} characters)`;
}

/** An append-only JSON-lines file. */
export class AuditLog {
  readonly #fs: FileSystem;
  readonly #filePath: string;
  readonly #nowMs: () => number;
  readonly #onWarning: (message: string) => void;
  #handle: FileHandle | undefined;
  #position = 0;
  #pending: string[] = [];
  #pendingBytes = 0;
  #dropped = 0;
  /** Dropped lines already reported by a `droppedLines` line. */
  #droppedReported = 0;
  /** Per kind of denial (see the header): how many may still be written in the current second, and when it began. */
  readonly #denials = {
    resource: { tokens: DENIALS_PER_SECOND, secondMs: -Infinity },
    other: { tokens: DENIALS_PER_SECOND, secondMs: -Infinity },
  };
  #writing: Promise<void> | undefined;
  #failed = false;

  private constructor(
    fs: FileSystem,
    filePath: string,
    nowMs: () => number,
    onWarning: (message: string) => void,
  ) {
    this.#fs = fs;
    this.#filePath = filePath;
    this.#nowMs = nowMs;
    this.#onWarning = onWarning;
  }

  /** Opens (or creates) the file for appending. */
  static async open(
    fs: FileSystem,
    filePath: string,
    nowMs: () => number,
    onWarning: (message: string) => void,
  ): Promise<AuditLog> {
    const log = new AuditLog(fs, filePath, nowMs, onWarning);
    try {
      const size = await fs.sizeBytes(filePath);
      log.#handle = await fs.open(filePath, size === null ? 'wx' : 'r+');
      log.#position = size ?? 0;
    } catch (error) {
      throw new OffsetStoreError(
        'INVALID_CONFIG',
        `audit log ${filePath} cannot be opened for appending: ${(error as Error).message}`,
        { cause: error },
      );
    }
    return log;
  }

  /** Lines dropped because too many were waiting. */
  get droppedCount(): number {
    return this.#dropped;
  }

  /** Appends an event (asynchronously; `idle()` waits for it). */
  record(event: AuditEvent): void {
    if (this.#failed) return;
    const nowMs = this.#nowMs();
    if (event.outcome === 'denied') {
      const bucket = event.resource === undefined ? this.#denials.other : this.#denials.resource;
      if (nowMs - bucket.secondMs >= 1000) {
        bucket.secondMs = nowMs;
        bucket.tokens = DENIALS_PER_SECOND;
      }
      if (bucket.tokens === 0) {
        this.#drop();
        return;
      }
      bucket.tokens--;
    }
    const line = JSON.stringify({
      time: new Date(nowMs).toISOString(),
      principal: bounded(event.principal),
      clientHost: event.clientHost,
      listener: event.listener,
      api: event.api,
      ...(event.resource === undefined ? {} : { resource: bounded(event.resource) }),
      ...(event.operation === undefined ? {} : { operation: event.operation }),
      outcome: event.outcome,
      ...(event.reason === undefined ? {} : { reason: bounded(event.reason) }),
      ...(event.user === undefined ? {} : { user: bounded(event.user) }),
    });
    if (
      this.#pending.length >= PENDING_LINES_MAX ||
      this.#pendingBytes + line.length > PENDING_BYTES_MAX
    ) {
      this.#drop();
      return;
    }
    this.#pending.push(line);
    this.#pendingBytes += line.length;
    this.#writing ??= this.#drain();
  }

  /**
   * Counts a line not written; the count is written as soon as the file takes a write (with lines
   * waiting, or alone), so that it is there even if nothing is recorded after it.
   */
  #drop(): void {
    this.#dropped++;
    this.#writing ??= this.#drain();
  }

  /** Resolves once every recorded event is written. */
  async idle(): Promise<void> {
    while (this.#writing !== undefined) await this.#writing;
  }

  /** Writes what is pending, fdatasyncs and closes the file. */
  async close(): Promise<void> {
    await this.idle();
    const handle = this.#handle;
    this.#handle = undefined;
    if (handle === undefined) return;
    try {
      if (!this.#failed) await handle.datasync();
    } finally {
      await handle.close();
    }
  }

  /** Opens the path again (rotated or truncated under this log) and goes on at its end. */
  async #reopen(): Promise<void> {
    const old = this.#handle;
    this.#handle = undefined;
    await old?.close();
    const size = await this.#fs.sizeBytes(this.#filePath);
    this.#handle = await this.#fs.open(this.#filePath, size === null ? 'wx' : 'r+');
    this.#position = size ?? 0;
  }

  async #drain(): Promise<void> {
    try {
      while (
        (this.#pending.length > 0 || this.#dropped > this.#droppedReported) &&
        this.#handle !== undefined
      ) {
        const lines = this.#pending;
        this.#pending = [];
        this.#pendingBytes = 0;
        if (this.#dropped > this.#droppedReported) {
          lines.push(
            JSON.stringify({
              time: new Date(this.#nowMs()).toISOString(),
              droppedLines: this.#dropped - this.#droppedReported,
            }),
          );
          this.#droppedReported = this.#dropped;
        }
        const bytes = Buffer.from(`${lines.join('\n')}\n`, 'utf8');
        if ((await this.#fs.sizeBytes(this.#filePath)) !== this.#position) await this.#reopen();
        await this.#handle!.writev([bytes], this.#position);
        this.#position += bytes.length;
      }
    } catch (error) {
      this.#failed = true;
      this.#pending = [];
      this.#onWarning(
        `audit log ${this.#filePath}: a write failed, auditing stopped: ${error instanceof Error ? error.message : String(error)}`,
      );
    } finally {
      this.#writing = undefined;
    }
  }
}
