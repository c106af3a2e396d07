/**
 * A one-line progress display on stderr: a spinner with a status text, or a bar when the amount of
 * work is known. It draws only when stderr is a terminal, so piped and `--json` output never carry
 * control characters; otherwise every method is a no-op. The line is redrawn in place (`\r` plus
 * erase-to-end) at most every 80 ms and erased by `stop()`.
 */
import type { Output } from './output.js';

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const FRAME_INTERVAL_MS = 80;
const BAR_WIDTH = 24;

/** The progress line; see the module header. */
export class Progress {
  readonly #output: Output;
  readonly #enabled: boolean;
  readonly #startedMs = performance.now();
  #text = '';
  #frame = 0;
  #timer: NodeJS.Timeout | undefined;

  /**
   * Starts drawing at once when stderr is a terminal and the output is not JSON; otherwise every method
   * is a no-op.
   */
  constructor(output: Output) {
    this.#output = output;
    this.#enabled = output.interactive && !output.json;
    if (this.#enabled) {
      this.#timer = setInterval(() => this.#draw(), FRAME_INTERVAL_MS);
      this.#timer.unref();
    }
  }

  /** Milliseconds since the display started. */
  get elapsedMs(): number {
    return performance.now() - this.#startedMs;
  }

  /** Shows a spinner with `text`. */
  spin(text: string): void {
    this.#text = text;
    this.#draw();
  }

  /** Shows a bar filled `done / total`, then `text`. */
  bar(done: number, total: number, text: string): void {
    const filled = total === 0 ? BAR_WIDTH : Math.round((done / total) * BAR_WIDTH);
    this.#text = `[${'#'.repeat(filled)}${'.'.repeat(BAR_WIDTH - filled)}] ${done}/${total} ${text}`;
    this.#draw();
  }

  /** Erases the line and stops redrawing. */
  stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    if (this.#enabled) this.#output.stderr('\r\x1b[2K');
  }

  #draw(): void {
    if (!this.#enabled || this.#text === '') return;
    this.#frame = (this.#frame + 1) % FRAMES.length;
    this.#output.stderr(`\r\x1b[2K${FRAMES[this.#frame]} ${this.#text}`);
  }
}
