/** Every command of the CLI, in the order `--help` lists them. */
import type { Command } from '../command.js';
import { aclsAdd, aclsList, aclsRemove } from './acls.js';
import { backup } from './backup.js';
import { clusterStatusCommand } from './cluster-status.js';
import { compact } from './compact.js';
import { demo } from './demo.js';
import { groupsDelete } from './groups-delete.js';
import { groupsDescribe } from './groups-describe.js';
import { groupsList } from './groups-list.js';
import { groupsRemoveMembers } from './groups-remove-members.js';
import { lab } from './lab.js';
import { logDump } from './log-dump.js';
import { logVerify } from './log-verify.js';
import { offsetsDelete } from './offsets-delete.js';
import { offsetsReset } from './offsets-reset.js';
import { serve } from './serve.js';
import { stats } from './stats.js';
import { usersAdd, usersList, usersRemove } from './users.js';

/** The command table. */
export const COMMANDS: readonly Command[] = [
  groupsList,
  groupsDescribe,
  groupsRemoveMembers,
  groupsDelete,
  offsetsReset,
  offsetsDelete,
  logDump,
  logVerify,
  compact,
  backup,
  stats,
  serve,
  usersAdd,
  usersRemove,
  usersList,
  aclsAdd,
  aclsRemove,
  aclsList,
  clusterStatusCommand,
  lab,
  demo,
];
