/**
 * Runs the CLI as a real child process (`node --import tsx src/cli/main.ts ...`), the way a user's
 * shell does, and collects its exit code and output.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** The repository root. */
export const REPO_DIR = fileURLToPath(new URL('../../', import.meta.url));
const MAIN = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));

/** What a CLI run produced. */
export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `offset-store <args>` from source; resolves (never rejects) with the exit code and output. */
export function runCli(
  args: readonly string[],
  options: {
    timeoutMs?: number;
    executable?: string[];
    cwd?: string;
    /** Close the pipe of its stdout at once, as a reader that went away (`| head`) does. */
    stdoutClosed?: boolean;
    /** Its environment; default this process's. */
    env?: NodeJS.ProcessEnv;
  } = {},
): Promise<CliRun> {
  const command = options.executable ?? ['--import', 'tsx', MAIN];
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [...command, ...args],
      {
        cwd: options.cwd ?? REPO_DIR,
        timeout: options.timeoutMs ?? 60_000,
        maxBuffer: 64 * 1024 * 1024,
        ...(options.env === undefined ? {} : { env: options.env }),
      },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
        resolve({ code, stdout, stderr });
      },
    );
    if (options.stdoutClosed === true) child.stdout?.destroy();
  });
}

/** Parses the stdout of a `--json` run. */
export function json<T = any>(run: CliRun): T {
  try {
    return JSON.parse(run.stdout) as T;
  } catch {
    throw new TypeError(
      `stdout is not JSON (exit ${run.code}):\n${run.stdout}\nstderr:\n${run.stderr}`,
    );
  }
}
