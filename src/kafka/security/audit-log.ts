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
 * end (lines are written to the OS, not fdatasynced one by one; `close()` fdatasyncs). At most
 * `pendingLinesMax` lines wait; past it lines are dropped and counted, and the count is written as
 * a line of its own once the queue drains, so a flood of denials cannot grow the server's memory.
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

/** An append-only JSON-lines file. */
export class AuditLog {
  readonly #fs: FileSystem;
  readonly #filePath: string;
  readonly #nowMs: () => number;
  readonly #onWarning: (message: string) => void;
  #handle: FileHandle | undefined;
  #position = 0;
  #pending: string[] = [];
  #dropped = 0;
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
    if (this.#pending.length >= PENDING_LINES_MAX) {
      this.#dropped++;
      return;
    }
    this.#pending.push(JSON.stringify({ time: new Date(this.#nowMs()).toISOString(), ...event }));
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

  async #drain(): Promise<void> {
    try {
      let reported = 0;
      while (this.#pending.length > 0 && this.#handle !== undefined) {
        const lines = this.#pending;
        this.#pending = [];
        if (this.#dropped > reported) {
          lines.push(
            JSON.stringify({
              time: new Date(this.#nowMs()).toISOString(),
              droppedLines: this.#dropped - reported,
            }),
          );
          reported = this.#dropped;
        }
        const bytes = Buffer.from(`${lines.join('\n')}\n`, 'utf8');
        await this.#handle.writev([bytes], this.#position);
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
