/**
 * Opens the store of a command's `--dir` through the admin facade for the duration of one
 * operation, routing the store's warnings to stderr, and always closes it (releasing the lock).
 *
 * Commands that only read (`readOnly`: list, describe, stats) also work on a store another process
 * has open: with `--read-only`, or when the store turns out to be locked by a live process, the
 * store is opened to read only (no lock, nothing written; the state as of the open), and stderr
 * says so.
 */
import { StoreAdmin, liveLockHolder, type StoreAdminOptions } from '../../admin/index.js';
import { isOffsetStoreError } from '../../errors/index.js';
import { NodeFileSystem } from '../../io/index.js';
import type { CommandContext, OptionSpec } from '../command.js';

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
  options: StoreAdminOptions & { readsOnly?: boolean } = {},
): Promise<T> {
  const { readsOnly, ...adminOptions } = options;
  const onWarning = (message: string) => context.output.warn(message);
  let admin: StoreAdmin;
  if (readsOnly === true && context.values['read-only'] === true) {
    admin = await openReadOnly(context, adminOptions);
  } else {
    try {
      admin = await StoreAdmin.open(context.dir, { onWarning, ...adminOptions });
    } catch (error) {
      if (readsOnly !== true || !isOffsetStoreError(error, 'STORE_LOCKED')) throw error;
      admin = await openReadOnly(context, adminOptions);
    }
  }
  try {
    return await operation(admin);
  } finally {
    await admin.close();
  }
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
