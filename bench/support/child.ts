/**
 * Runs part of a bench in a fresh Node process (`node --import tsx`), for figures that a warm,
 * already-used process would distort: recovery time (cold JIT, as after a restart) and heap per
 * offset (`--expose-gc`, nothing else on the heap). The child prints one `BENCH_RESULT <json>` line;
 * everything else it prints passes through.
 */
import { spawn } from 'node:child_process';

const RESULT_PREFIX = 'BENCH_RESULT ';

/** Options of a child run. */
export interface ChildOptions {
  /** Extra Node flags, e.g. `--expose-gc`. */
  execArgv?: string[];
  env?: NodeJS.ProcessEnv;
}

/** Runs `node --import tsx <file> ...args` and resolves with the JSON the child reported. */
export function runChild<T>(
  file: string,
  args: readonly string[],
  options: ChildOptions = {},
): Promise<T> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', ...(options.execArgv ?? []), file, ...args],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
        env: options.env ?? process.env,
      },
    );
    let out = '';
    let result: T | undefined;
    let found = false;
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      out += chunk;
      let newline: number;
      while ((newline = out.indexOf('\n')) >= 0) {
        const line = out.slice(0, newline);
        out = out.slice(newline + 1);
        if (line.startsWith(RESULT_PREFIX)) {
          result = JSON.parse(line.slice(RESULT_PREFIX.length)) as T;
          found = true;
        } else {
          console.log(line);
        }
      }
    });
    child.on('error', reject);
    child.on('close', (code, signal) => {
      if (code === 0 && found) resolve(result as T);
      else
        reject(
          new Error(
            `child ${file} ${args.join(' ')} exited with ${signal ?? code}${found ? '' : ' without a result'}`,
          ),
        );
    });
  });
}

/** In the child: reports the result to the parent. */
export function reportToParent(result: unknown): void {
  process.stdout.write(`${RESULT_PREFIX}${JSON.stringify(result)}\n`);
}
