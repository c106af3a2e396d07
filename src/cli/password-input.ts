/**
 * Reads a password for `offset-store users add`: from stdin with `--password-stdin` (the first
 * line, without its line ending: what a script pipes in), or from the terminal at a prompt that
 * does not echo what is typed, asked twice. Never from an argument: a password on a command line is
 * visible to every user of the machine (ps) and lands in shell history.
 */
import { Interrupted, UsageError } from './command.js';

/** The longest password accepted (and the most stdin bytes read for one). */
const PASSWORD_BYTES_MAX = 1024;

/** The first line of stdin. */
export async function passwordFromStdin(
  stdin: NodeJS.ReadableStream = process.stdin,
): Promise<string> {
  let text = '';
  for await (const chunk of stdin) {
    text += typeof chunk === 'string' ? chunk : (chunk as Buffer).toString('utf8');
    if (text.includes('\n') || Buffer.byteLength(text) > PASSWORD_BYTES_MAX) break;
  }
  const line = text.split(/\r?\n/)[0] ?? '';
  if (Buffer.byteLength(line) > PASSWORD_BYTES_MAX)
    throw new UsageError(`the password must be at most ${PASSWORD_BYTES_MAX} bytes`);
  if (line === '')
    throw new UsageError('no password on stdin (--password-stdin reads its first line)');
  return line;
}

/** A terminal to prompt at: what `process.stdin` is when it is one. */
export type TerminalInput = Pick<
  NodeJS.ReadStream,
  'isTTY' | 'setRawMode' | 'resume' | 'pause' | 'setEncoding' | 'on' | 'off'
>;

/** Where the prompts go (the command's stderr). */
export interface PromptOutput {
  write(text: string): unknown;
}

/** Reads one line from the terminal without echoing it; Ctrl-C rejects with Interrupted. */
function promptHidden(prompt: string, stdin: TerminalInput, stderr: PromptOutput): Promise<string> {
  return new Promise((resolve, reject) => {
    let typed = '';
    stderr.write(prompt);
    stdin.setRawMode(true);
    stdin.resume();
    stdin.setEncoding('utf8');
    const done = (error?: Error) => {
      stdin.setRawMode(false);
      stdin.pause();
      stdin.off('data', onData);
      stderr.write('\n');
      if (error === undefined) resolve(typed);
      else reject(error);
    };
    const onData = (chunk: string) => {
      for (const char of chunk) {
        if (char === '\r' || char === '\n') return done();
        if (char === '\u0003') return done(new Interrupted('interrupted at the password prompt'));
        if (char === '\u007f' || char === '\b') typed = typed.slice(0, -1);
        else if (typed.length < PASSWORD_BYTES_MAX) typed += char;
      }
    };
    stdin.on('data', onData);
  });
}

/** Asks for a password twice at the terminal; a UsageError when stdin is not one. */
export async function passwordFromTerminal(
  name: string,
  stdin: TerminalInput = process.stdin,
  stderr: PromptOutput = process.stderr,
): Promise<string> {
  if (stdin.isTTY !== true)
    throw new UsageError('stdin is not a terminal: pipe the password in with --password-stdin');
  const first = await promptHidden(`Password for ${name}: `, stdin, stderr);
  const second = await promptHidden('Again: ', stdin, stderr);
  if (first !== second) throw new UsageError('the two passwords differ');
  if (first === '') throw new UsageError('the password must not be empty');
  return first;
}
