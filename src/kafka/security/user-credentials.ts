/**
 * The SASL users of a server: `kafka-users.json` in the store directory (security-file.ts has the
 * file's frame). Each user holds a SCRAM verifier per mechanism (scram.ts): salt, iterations,
 * StoredKey and ServerKey, base64. No password is ever stored, nor anything a password can be
 * computed from without a brute-force search; SASL/PLAIN is checked against the SCRAM-SHA-256
 * verifier (or SCRAM-SHA-512 when that is the only one).
 *
 * | entry field              | meaning                                                     |
 * |--------------------------|-------------------------------------------------------------|
 * | name                     | the user, as SASL names it (principal `User:<name>`)        |
 * | scram[mechanism].salt    | base64 of the random salt (16 bytes)                        |
 * | scram[mechanism].iterations | PBKDF2 iterations, >= 4096                               |
 * | scram[mechanism].storedKey  | base64 of H(ClientKey)                                   |
 * | scram[mechanism].serverKey  | base64 of HMAC(SaltedPassword, "Server Key")             |
 *
 * Changes read the file, change one user and write the whole file (temp, fdatasync, rename,
 * directory fsync): a crash leaves the old set of users or the new one.
 */
import { createHash, randomBytes } from 'node:crypto';
import * as path from 'node:path';
import type { FileSystem } from '../../io/index.js';
import {
  SCRAM_ITERATIONS_MAX,
  SCRAM_ITERATIONS_MIN,
  SCRAM_MECHANISMS,
  scramVerifier,
  type ScramMechanism,
  type ScramVerifier,
} from './scram.js';
import {
  corruptSecurityFile,
  readSecurityFile,
  underSecurityFilesLock,
  writeSecurityFile,
} from './security-file.js';

/** The users file's name in the store directory. */
export const USERS_FILE = 'kafka-users.json';
const KEY = 'users';
const NAME_BYTES_MAX = 255;

/** A user as `offset-store users list` shows it: never a secret. */
export interface UserListing {
  /** The user name. */
  readonly name: string;
  /** The mechanisms it has a verifier for, with their iterations. */
  readonly mechanisms: readonly {
    readonly mechanism: ScramMechanism;
    readonly iterations: number;
  }[];
}

type Verifiers = Partial<Record<ScramMechanism, ScramVerifier>>;

/** Why a user name is refused, or null when it is fine. */
export function userNameProblem(name: string): string | null {
  if (name.length === 0) return 'a user name must not be empty';
  if (Buffer.byteLength(name) > NAME_BYTES_MAX)
    return `a user name must be at most ${NAME_BYTES_MAX} UTF-8 bytes`;
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x1f\x7f]/.test(name)) return 'a user name must not contain control characters';
  return null;
}

/** The users of a server, read once; lookups are synchronous. */
export class UserCredentials {
  readonly #users: ReadonlyMap<string, Verifiers>;
  /**
   * Key of the fake salts SCRAM gives unknown users: a hash of every user's stored keys, secret
   * like them, so the same across restarts while the users are the same (a salt that changed at
   * each restart would tell an unknown user from a known one, whose salt never does). Random when
   * there are no users, which makes every name unknown anyway.
   */
  readonly decoySecret: Buffer;
  readonly #typicalIterations = new Map<ScramMechanism, number>();

  constructor(users: ReadonlyMap<string, Verifiers>) {
    this.#users = users;
    const hash = createHash('sha256').update('offset-store SCRAM decoy salts\0');
    for (const name of [...users.keys()].sort())
      for (const mechanism of SCRAM_MECHANISMS) {
        const verifier = users.get(name)![mechanism];
        if (verifier !== undefined) hash.update(verifier.storedKey).update(verifier.serverKey);
      }
    this.decoySecret = users.size === 0 ? randomBytes(32) : hash.digest();
    for (const mechanism of SCRAM_MECHANISMS) {
      const counts = new Map<number, number>();
      for (const verifiers of users.values()) {
        const iterations = verifiers[mechanism]?.iterations;
        if (iterations !== undefined) counts.set(iterations, (counts.get(iterations) ?? 0) + 1);
      }
      let typical = SCRAM_ITERATIONS_MIN;
      let most = 0;
      for (const [iterations, count] of counts)
        if (count > most || (count === most && iterations < typical)) {
          typical = iterations;
          most = count;
        }
      this.#typicalIterations.set(mechanism, typical);
    }
  }

  /**
   * The iteration count SCRAM gives an unknown user: the one most users of `mechanism` have (the
   * default when none), so that an unknown name looks like most known ones.
   */
  typicalIterations(mechanism: ScramMechanism): number {
    return this.#typicalIterations.get(mechanism) ?? SCRAM_ITERATIONS_MIN;
  }

  /** Reads `kafka-users.json` of the store in `dir` (no users when it does not exist). CORRUPT_MESSAGE for a damaged file. */
  static async load(fs: FileSystem, dir: string): Promise<UserCredentials> {
    const filePath = path.join(dir, USERS_FILE);
    const users = new Map<string, Verifiers>();
    for (const entry of await readSecurityFile(fs, filePath, KEY)) {
      const { name, verifiers } = decodeUser(filePath, entry);
      if (users.has(name))
        throw corruptSecurityFile(filePath, `user ${JSON.stringify(name)} appears twice`);
      users.set(name, verifiers);
    }
    return new UserCredentials(users);
  }

  /** How many users there are. */
  get size(): number {
    return this.#users.size;
  }

  /** The verifier of `name` for `mechanism`, or undefined. */
  verifier(name: string, mechanism: ScramMechanism): ScramVerifier | undefined {
    return this.#users.get(name)?.[mechanism];
  }

  /** The verifier SASL/PLAIN checks a password against. */
  plainVerifier(name: string): { mechanism: ScramMechanism; verifier: ScramVerifier } | undefined {
    for (const mechanism of SCRAM_MECHANISMS) {
      const verifier = this.verifier(name, mechanism);
      if (verifier !== undefined) return { mechanism, verifier };
    }
    return undefined;
  }

  /** Every user, sorted by name, without secrets. */
  list(): UserListing[] {
    return [...this.#users]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([name, verifiers]) => ({
        name,
        mechanisms: SCRAM_MECHANISMS.filter((m) => verifiers[m] !== undefined).map((m) => ({
          mechanism: m,
          iterations: verifiers[m]!.iterations,
        })),
      }));
  }

  /** The users after adding (or replacing) `name` with verifiers of `password`, written durably. */
  static async addUser(
    fs: FileSystem,
    dir: string,
    name: string,
    password: string,
    options: { iterations?: number; mechanisms?: readonly ScramMechanism[] } = {},
  ): Promise<UserCredentials> {
    const problem = userNameProblem(name);
    if (problem !== null) throw new RangeError(problem);
    if (password.length === 0) throw new RangeError('a password must not be empty');
    const iterations = options.iterations ?? SCRAM_ITERATIONS_MIN;
    if (
      !Number.isSafeInteger(iterations) ||
      iterations < SCRAM_ITERATIONS_MIN ||
      iterations > SCRAM_ITERATIONS_MAX
    )
      throw new RangeError(
        `iterations must be an integer in [${SCRAM_ITERATIONS_MIN}, ${SCRAM_ITERATIONS_MAX}], got ${iterations}`,
      );
    const verifiers: Verifiers = {};
    for (const mechanism of options.mechanisms ?? SCRAM_MECHANISMS)
      verifiers[mechanism] = await scramVerifier(mechanism, password, { iterations });
    return underSecurityFilesLock(fs, dir, async () => {
      const current = await UserCredentials.load(fs, dir);
      const users = new Map(current.#users);
      users.set(name, verifiers);
      return UserCredentials.#write(fs, dir, users);
    });
  }

  /** The users after removing `name` (written durably); `removed` is false when there was no such user. */
  static async removeUser(
    fs: FileSystem,
    dir: string,
    name: string,
  ): Promise<{ users: UserCredentials; removed: boolean }> {
    return underSecurityFilesLock(fs, dir, async () => {
      const current = await UserCredentials.load(fs, dir);
      if (!current.#users.has(name)) return { users: current, removed: false };
      const users = new Map(current.#users);
      users.delete(name);
      return { users: await UserCredentials.#write(fs, dir, users), removed: true };
    });
  }

  static async #write(
    fs: FileSystem,
    dir: string,
    users: Map<string, Verifiers>,
  ): Promise<UserCredentials> {
    const entries = [...users]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([name, verifiers]) => ({
        name,
        scram: Object.fromEntries(
          SCRAM_MECHANISMS.filter((m) => verifiers[m] !== undefined).map((m) => {
            const v = verifiers[m]!;
            return [
              m,
              {
                salt: v.salt.toString('base64'),
                iterations: v.iterations,
                storedKey: v.storedKey.toString('base64'),
                serverKey: v.serverKey.toString('base64'),
              },
            ];
          }),
        ),
      }));
    await writeSecurityFile(fs, path.join(dir, USERS_FILE), KEY, entries);
    return new UserCredentials(users);
  }
}

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

function decodeUser(filePath: string, value: unknown): { name: string; verifiers: Verifiers } {
  const bad = () =>
    corruptSecurityFile(
      filePath,
      `user record ${JSON.stringify(value)?.slice(0, 80)} is malformed`,
    );
  const entry = (typeof value === 'object' && value !== null ? value : {}) as Record<
    string,
    unknown
  >;
  if (typeof entry.name !== 'string' || userNameProblem(entry.name) !== null) throw bad();
  const scram = (
    typeof entry.scram === 'object' && entry.scram !== null ? entry.scram : {}
  ) as Record<string, unknown>;
  const verifiers: Verifiers = {};
  for (const [mechanism, raw] of Object.entries(scram)) {
    if (!SCRAM_MECHANISMS.includes(mechanism as ScramMechanism)) throw bad();
    const v = (typeof raw === 'object' && raw !== null ? raw : {}) as Record<string, unknown>;
    const fields = [v.salt, v.storedKey, v.serverKey];
    if (
      !fields.every((f) => typeof f === 'string' && BASE64.test(f)) ||
      !Number.isSafeInteger(v.iterations) ||
      (v.iterations as number) < SCRAM_ITERATIONS_MIN
    )
      throw bad();
    verifiers[mechanism as ScramMechanism] = {
      salt: Buffer.from(v.salt as string, 'base64'),
      iterations: v.iterations as number,
      storedKey: Buffer.from(v.storedKey as string, 'base64'),
      serverKey: Buffer.from(v.serverKey as string, 'base64'),
    };
  }
  if (Object.keys(verifiers).length === 0) throw bad();
  return { name: entry.name, verifiers };
}
