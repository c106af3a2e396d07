/** The command line run in this process, its output captured: what a test of a command asserts on. */
import { runCli } from '../../src/cli/run-cli.js';

/** What a run of the command line gave: its exit code and everything it wrote. */
export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `offset-store <args>` in this process, capturing stdout and stderr. */
export async function runCliCaptured(args: string[]): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, {
    stdout: { write: (t: string) => (stdout += t) },
    stderr: { write: (t: string) => (stderr += t) },
  });
  return { code, stdout, stderr };
}
