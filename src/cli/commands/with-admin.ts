/**
 * Opens the store of a command's `--dir` through the admin facade for the duration of one
 * operation, routing the store's warnings to stderr, and always closes it (releasing the lock).
 *
 * SIGINT, SIGTERM or SIGHUP while the operation runs closes the store before the command exits, so
 * that what it was writing is finished or taken back (a backup removes its `<to>.partial`) rather
 * than abandoned mid-file: an operation that the close stops is reported as Interrupted (exit 128 +
 * the signal's number, with the command's own words for what was not done), one that completes
 * anyway as done. A second signal ends the process at once.
 *
 * Commands that only read (`readOnly`: list, describe, stats) also work on a store another process
 * has open, or on a file system this process cannot write (mounted read-only, a snapshot; a folder
 * not its own): with `--read-only`, or when the store turns out to be locked by a live process or
 * its folder refuses to be written (EROFS, EACCES, EPERM) or has no room left (ENOSPC, EDQUOT: the
 * lock file cannot be written on a full disk), the store is opened to read only (no
 * lock, nothing written; the state as of the open), and stderr says so. With `serveHealthyBuckets`
 * (stats, groups describe), an offsets-bucket that fails to recover is said on stderr rather than
 * failing the command, which goes on with the other buckets.
 */
import { constants } from 'node:os';
import { StoreAdmin, liveLockHolder, type StoreAdminOptions } from '../../admin/index.js';
import { isOffsetStoreError } from '../../errors/index.js';
import { NodeFileSystem } from '../../io/index.js';
import { Interrupted, type CommandContext, type OptionSpec } from '../command.js';

/** The `--read-only` option of the commands that only read. */
export const READ_ONLY_OPTION: Record<string, OptionSpec> = {
  'read-only': {
    type: 'boolean',
    description:
      'read the store without opening it for writing (no lock, nothing written): works while another process has it open; the default when it does',
  },
};

/** Runs `operation` on the store in `context.dir`, then closes the store. */
export async function withAdmin<T>(
  context: CommandContext,
  operation: (admin: StoreAdmin) => Promise<T>,
  options: StoreAdminOptions & {
    readsOnly?: boolean;
    /** What a signal that stopped the operation left undone, for its message. */
    whenStopped?: string;
  } = {},
): Promise<T> {
  const { readsOnly, whenStopped, ...adminOptions } = options;
  const onWarning = (message: string) => context.output.warn(message);
  let admin: StoreAdmin;
  if (readsOnly === true && context.values['read-only'] === true) {
    admin = await openReadOnly(context, adminOptions);
  } else {
    try {
      admin = await StoreAdmin.open(context.dir, { onWarning, ...adminOptions });
    } catch (error) {
      const refused = unwritable(error);
      if (readsOnly !== true || (!isOffsetStoreError(error, 'STORE_LOCKED') && !refused))
        throw error;
      if (refused)
        context.output.warn(
          `the store's folder cannot be written here (${refused}): read without its lock (nothing is written)`,
        );
      admin = await openReadOnly(context, adminOptions);
    }
  }
  if (admin.recoveryFailure !== undefined)
    context.output.warn(
      `${admin.recoveryFailure.message}; the other offsets-buckets are read as usual (offset-store log verify tells more)`,
    );
  const stopping = closeOnSignal(() => admin.close());
  try {
    return await operation(admin);
  } catch (error) {
    const signal = stopping.signal;
    if (signal === undefined) throw error;
    throw new Interrupted(
      `stopped by ${signal}: ${whenStopped ?? 'the store was closed before the command finished'}`,
      128 + constants.signals[signal],
    );
  } finally {
    stopping.dispose();
    await admin.close();
  }
}

const STOPPING_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/**
 * Until disposed, the first of SIGINT, SIGTERM and SIGHUP calls `close` (once) and is remembered;
 * the handlers are then removed, so that a second signal has its default effect and ends the process.
 */
function closeOnSignal(close: () => Promise<void>): {
  readonly signal: NodeJS.Signals | undefined;
  dispose(): void;
} {
  let received: NodeJS.Signals | undefined;
  const dispose = () => {
    for (const signal of STOPPING_SIGNALS) process.off(signal, onSignal);
  };
  function onSignal(signal: NodeJS.Signals): void {
    received = signal;
    dispose();
    // A failure to close is the operation's to report (it rejects), or the final close's.
    close().catch(() => {});
  }
  for (const signal of STOPPING_SIGNALS) process.on(signal, onSignal);
  return {
    get signal() {
      return received;
    },
    dispose,
  };
}

const UNWRITABLE = new Set(['EROFS', 'EACCES', 'EPERM', 'ENOSPC', 'EDQUOT']);

/** The errno of a file system that refuses writes (read-only, not permitted, full) behind `error`, if any. */
function unwritable(error: unknown): string | undefined {
  for (let e = error; e instanceof Error; e = e.cause) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== undefined && UNWRITABLE.has(code)) return code;
  }
  return undefined;
}

async function openReadOnly(
  context: CommandContext,
  options: StoreAdminOptions,
): Promise<StoreAdmin> {
  // (A --dir that is not a store folder is refused by the open below, with its own error.)
  const holder = await liveLockHolder(options.fs ?? new NodeFileSystem(), context.dir).catch(
    () => null,
  );
  if (holder !== null)
    context.output.warn(
      `the store is open by live process ${holder}: read without its lock, as of now (nothing is written)`,
    );
  return StoreAdmin.open(context.dir, {
    ...options,
    readOnly: true,
    // A live owner appends while the store is read: the end of a log read then may be an append
    // in progress, not a torn write to worry about.
    onWarning: (message) => {
      if (holder === null || !/torn write/.test(message)) context.output.warn(message);
    },
  });
}
