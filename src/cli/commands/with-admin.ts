/**
 * Opens the store of a command's `--dir` through the admin facade for the duration of one
 * operation, routing the store's warnings to stderr, and always closes it (releasing the lock).
 */
import { StoreAdmin, type StoreAdminOptions } from '../../admin/index.js';
import type { CommandContext } from '../command.js';

/** Runs `operation` on the store in `context.dir`, then closes the store. */
export async function withAdmin<T>(
  context: CommandContext,
  operation: (admin: StoreAdmin) => Promise<T>,
  options: StoreAdminOptions = {},
): Promise<T> {
  const admin = await StoreAdmin.open(context.dir, {
    onWarning: (message) => context.output.warn(message),
    ...options,
  });
  try {
    return await operation(admin);
  } finally {
    await admin.close();
  }
}
