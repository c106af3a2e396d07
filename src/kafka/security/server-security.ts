/**
 * Everything a server's security holds, one per server: the SASL users and the ACLs (read from the
 * store directory at start and again on `reload()`), the authorizer (when enabled), the login
 * throttle, the connections per address, the client quotas, and the audit log. The server builds it at start and
 * closes it at close; handlers reach it through the closures that security's handlers are made
 * with, never through the handler context.
 */
import { randomBytes } from 'node:crypto';
import * as path from 'node:path';
import { OffsetStoreError } from '../../errors/index.js';
import type { FileSystem } from '../../io/index.js';
import { Serial, notAnOptionsObject, type Clock } from '../../util/index.js';
import { ACLS_FILE, AclSet } from './acl.js';
import { AuditLog, type AuditEvent } from './audit-log.js';
import { ClientQuotas, type QuotaLimits, type QuotaOptions } from './client-quotas.js';
import { GroupLimits } from './group-limits.js';
import { Authorizer } from './authorizer.js';
import type { ConnectionSession } from './connection-session.js';
import { usesSasl, type SecurityProtocol } from './listener.js';
import { LoginThrottle, LOGIN_THROTTLE_DEFAULTS } from './login-throttle.js';
import { scramVerifier, type ScramVerifier } from './scram.js';
import { USERS_FILE, UserCredentials } from './user-credentials.js';

/** How often refused connections are warned of, at most. */
const REFUSAL_WARNING_INTERVAL_MS = 60_000;

/** The security options of `startKafkaServer`. */
export interface SecurityOptions {
  /**
   * Check every request against the ACLs in the store directory (`offset-store acls`). Off by
   * default: then every authenticated principal may do everything.
   */
  readonly authorizer?: {
    /** Principals allowed everything, e.g. `['User:admin']`. */
    readonly superUsers?: readonly string[];
    /** Allow what a resource without any ACL is asked; default false (Kafka's allow.everyone.if.no.acl.found). */
    readonly allowEveryoneIfNoAclFound?: boolean;
  };
  /** Append a JSON line per denied or administrative request to this file (see docs/security.md). */
  readonly auditLogFile?: string;
  /** Delay of the answer to an address's first failed authentication (doubling per failure); default 100 ms. */
  readonly authFailureDelayMs?: number;
  /** The longest such delay; default 5000 ms. */
  readonly authFailureDelayMsMax?: number;
  /** Authentications of one address in progress at once; default 16. */
  readonly authenticationsPerAddressMax?: number;
  /**
   * How long a connection of a SASL listener may stay open without having authenticated; it is
   * closed then, whatever it sends meanwhile (ApiVersions keeps no connection open). Default
   * 10,000 ms.
   */
  readonly authenticationTimeoutMs?: number;
  /** Connections of one address open at once; one more is closed at once. Default 100 (Kafka's max.connections.per.ip is unlimited by default). */
  readonly connectionsPerAddressMax?: number;
  /** Client quotas (bytes/s, request time %), by principal, client id or default; none by default. */
  readonly quotas?: QuotaOptions;
  /** Most groups one principal may create through the server (counted since it started); default unlimited. */
  readonly groupsPerPrincipalMax?: number;
}

/** Security options after checking, with defaults. */
export interface ResolvedSecurityOptions {
  readonly authorizer:
    | { readonly superUsers: readonly string[]; readonly allowEveryoneIfNoAclFound: boolean }
    | undefined;
  readonly auditLogFile: string | undefined;
  readonly authFailureDelayMs: number;
  readonly authFailureDelayMsMax: number;
  readonly authenticationsPerAddressMax: number;
  readonly authenticationTimeoutMs: number;
  readonly connectionsPerAddressMax: number;
  readonly quotas: QuotaOptions;
  readonly groupsPerPrincipalMax: number | undefined;
}

function limits(value: unknown, name: string): void {
  if (value === undefined) return;
  if (notAnOptionsObject(value) !== undefined)
    throw new TypeError(`options.security.${name} must be an object`);
  const { bytesPerSecond, requestPercentage } = value as QuotaLimits;
  for (const [field, v] of [
    ['bytesPerSecond', bytesPerSecond],
    ['requestPercentage', requestPercentage],
  ] as const) {
    if (v !== undefined && (typeof v !== 'number' || !(v > 0) || !Number.isFinite(v)))
      throw new RangeError(
        `options.security.${name}.${field} must be a positive number, got ${String(v)}`,
      );
  }
}

function resolveQuotas(value: QuotaOptions | undefined): QuotaOptions {
  if (value === undefined) return {};
  if (notAnOptionsObject(value) !== undefined)
    throw new TypeError('options.security.quotas must be an object');
  limits(value.default, 'quotas.default');
  for (const name of ['principals', 'clientIds'] as const)
    if (value[name] !== undefined && notAnOptionsObject(value[name]) !== undefined)
      throw new TypeError(`options.security.quotas.${name} must be an object`);
  for (const [k, v] of Object.entries(value.principals ?? {}))
    limits(v, `quotas.principals[${JSON.stringify(k)}]`);
  for (const [k, v] of Object.entries(value.clientIds ?? {}))
    limits(v, `quotas.clientIds[${JSON.stringify(k)}]`);
  integer(value.windowCount, 'quotas.windowCount', 11, 2, 1000);
  integer(value.windowMs, 'quotas.windowMs', 1000, 1, 3_600_000);
  return value;
}

function integer(value: unknown, name: string, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number')
    throw new TypeError(`options.security.${name} must be a number, got ${typeof value}`);
  if (!Number.isSafeInteger(value) || value < min || value > max)
    throw new RangeError(
      `options.security.${name} must be an integer in [${min}, ${max}], got ${value}`,
    );
  return value;
}

/** Checks the security options and applies the defaults. */
export function resolveSecurityOptions(
  options: SecurityOptions | undefined,
): ResolvedSecurityOptions {
  const o = options ?? {};
  if (notAnOptionsObject(o) !== undefined)
    throw new TypeError('options.security must be an object');
  const authorizer = o.authorizer;
  if (authorizer !== undefined && notAnOptionsObject(authorizer) !== undefined)
    throw new TypeError('options.security.authorizer must be an object');
  const superUsers = authorizer?.superUsers ?? [];
  if (
    !Array.isArray(superUsers) ||
    superUsers.some((u) => typeof u !== 'string' || !u.startsWith('User:'))
  )
    throw new TypeError(
      'options.security.authorizer.superUsers must be an array of User:<name> strings',
    );
  if (o.auditLogFile !== undefined && (typeof o.auditLogFile !== 'string' || o.auditLogFile === ''))
    throw new TypeError('options.security.auditLogFile must be a non-empty string');
  const resolved = {
    authorizer:
      authorizer === undefined
        ? undefined
        : {
            superUsers: [...superUsers],
            allowEveryoneIfNoAclFound: authorizer.allowEveryoneIfNoAclFound === true,
          },
    auditLogFile: o.auditLogFile,
    authFailureDelayMs: integer(
      o.authFailureDelayMs,
      'authFailureDelayMs',
      LOGIN_THROTTLE_DEFAULTS.failureDelayMs,
      0,
      60_000,
    ),
    authFailureDelayMsMax: integer(
      o.authFailureDelayMsMax,
      'authFailureDelayMsMax',
      LOGIN_THROTTLE_DEFAULTS.failureDelayMsMax,
      0,
      600_000,
    ),
    authenticationsPerAddressMax: integer(
      o.authenticationsPerAddressMax,
      'authenticationsPerAddressMax',
      LOGIN_THROTTLE_DEFAULTS.handshakesPerAddressMax,
      1,
      1_000_000,
    ),
    authenticationTimeoutMs: integer(
      o.authenticationTimeoutMs,
      'authenticationTimeoutMs',
      10_000,
      1,
      3_600_000,
    ),
    connectionsPerAddressMax: integer(
      o.connectionsPerAddressMax,
      'connectionsPerAddressMax',
      100,
      1,
      1_000_000,
    ),
    quotas: resolveQuotas(o.quotas),
    groupsPerPrincipalMax:
      o.groupsPerPrincipalMax === undefined
        ? undefined
        : integer(o.groupsPerPrincipalMax, 'groupsPerPrincipalMax', 0, 1, 10_000_000),
  };
  if (resolved.authFailureDelayMsMax < resolved.authFailureDelayMs)
    throw new RangeError(
      'options.security.authFailureDelayMsMax must be at least authFailureDelayMs',
    );
  return resolved;
}

/** What `ServerSecurity.stats()` reports. */
export interface SecurityStats {
  /** Failed authentications. */
  readonly failedAuthentications: number;
  /** Authentications refused at once (too many in progress from one address). */
  readonly refusedAuthentications: number;
  /** Connections closed at once (too many from one address). */
  readonly refusedConnectionsPerAddress: number;
  /** Requests refused by an ACL (per group or topic). */
  readonly deniedOperations: number;
  /** Responses that carried a quota's throttle time (their connection muted). */
  readonly throttledResponses: number;
  /** Requests refused because their principal had created groupsPerPrincipalMax groups. */
  readonly refusedGroupCreations: number;
}

/** One server's security state. */
export class ServerSecurity {
  readonly options: ResolvedSecurityOptions;
  readonly clock: Clock;
  readonly throttle: LoginThrottle;
  /** Client quotas; `enabled` false when none is set. */
  readonly quotas: ClientQuotas;
  /** Groups created per principal; undefined without groupsPerPrincipalMax. */
  readonly groupLimits: GroupLimits | undefined;
  /** A verifier PLAIN checks unknown users against, so they cost the same time (the typical iterations). */
  #decoyVerifier: ScramVerifier;
  readonly #fs: FileSystem;
  readonly #dir: string;
  /** Refuses (LOG_STORAGE_ERROR) once `dir` no longer leads to the store's directory. */
  readonly #checkDirectory: (() => Promise<void>) | undefined;
  readonly #auditLog: AuditLog | undefined;
  #users: UserCredentials;
  /** ACLs read last (whether or not an authorizer enforces them). */
  #aclCount: number;
  #authorizer: Authorizer | undefined;
  readonly #listeners: readonly ListenerSecurity[];
  readonly #onWarning: (message: string) => void;
  readonly #connectionsByAddress = new Map<string, number>();
  #refusedConnections = 0;
  /** When a refused connection was last warned of (see connectionOpened). */
  #refusalWarnedAtMs = -Infinity;
  /** Reloads of the users and ACLs, one after another (see reload). */
  readonly #reloads = new Serial();
  #denied = 0;

  private constructor(fields: {
    options: ResolvedSecurityOptions;
    clock: Clock;
    fs: FileSystem;
    dir: string;
    checkDirectory: (() => Promise<void>) | undefined;
    users: UserCredentials;
    acls: AclSet;
    auditLog: AuditLog | undefined;
    decoyVerifier: ScramVerifier;
    listeners: readonly ListenerSecurity[];
    onWarning: (message: string) => void;
  }) {
    this.options = fields.options;
    this.#listeners = fields.listeners;
    this.#onWarning = fields.onWarning;
    this.clock = fields.clock;
    this.#fs = fields.fs;
    this.#dir = fields.dir;
    this.#checkDirectory = fields.checkDirectory;
    this.#users = fields.users;
    this.#aclCount = fields.acls.acls.length;
    this.#auditLog = fields.auditLog;
    this.#decoyVerifier = fields.decoyVerifier;
    this.#authorizer =
      fields.options.authorizer === undefined
        ? undefined
        : new Authorizer(fields.options.authorizer, fields.acls);
    this.quotas = new ClientQuotas(fields.options.quotas, fields.clock);
    this.groupLimits =
      fields.options.groupsPerPrincipalMax === undefined
        ? undefined
        : new GroupLimits(fields.options.groupsPerPrincipalMax);
    this.throttle = new LoginThrottle(
      {
        failureDelayMs: fields.options.authFailureDelayMs,
        failureDelayMsMax: fields.options.authFailureDelayMsMax,
        handshakesPerAddressMax: fields.options.authenticationsPerAddressMax,
      },
      fields.clock,
    );
  }

  /**
   * Reads the users and ACLs of the store in `dir` and opens the audit log. `checkDirectory`, when
   * given, is called before each read of the files (here and in `reload`): it refuses once `dir`
   * has been renamed or replaced, so that no other directory's users and ACLs are taken for the
   * store's. What the settings leave open that the files suggest is meant closed is warned of
   * (openDoors), here and at every reload.
   */
  static async open(fields: {
    options: ResolvedSecurityOptions;
    clock: Clock;
    fs: FileSystem;
    dir: string;
    checkDirectory?: () => Promise<void>;
    onWarning: (message: string) => void;
    /** The server's listeners (none: the doors are not checked). */
    listeners?: readonly ListenerSecurity[];
  }): Promise<ServerSecurity> {
    const { options, clock, fs, dir, checkDirectory } = fields;
    await checkDirectory?.();
    const users = await UserCredentials.load(fs, dir);
    const acls = await AclSet.load(fs, dir);
    const decoyVerifier = await decoyVerifierOf(users);
    const auditLog =
      options.auditLogFile === undefined
        ? undefined
        : await AuditLog.open(fs, options.auditLogFile, () => clock.nowMs(), fields.onWarning);
    const security = new ServerSecurity({
      options,
      clock,
      fs,
      dir,
      checkDirectory,
      users,
      acls,
      auditLog,
      decoyVerifier,
      listeners: fields.listeners ?? [],
      onWarning: fields.onWarning,
    });
    await security.#warnOpenDoors();
    return security;
  }

  /** Warns of each of openDoors, and of a users or ACL file other users of the machine can read or change. */
  async #warnOpenDoors(): Promise<void> {
    if (this.#listeners.length === 0) return;
    const doors = openDoors(this.#listeners, this.options.authorizer, {
      users: this.#users.size,
      acls: this.#aclCount,
    });
    for (const [name, secret] of [
      [USERS_FILE, true],
      [ACLS_FILE, false],
    ] as const) {
      const file = path.join(this.#dir, name);
      // A file that cannot be looked at is one the reads say more about: no warning of its own.
      const mode = await this.#fs.permissions?.(file).catch(() => null);
      if (mode === undefined || mode === null) continue;
      const readable = secret && (mode & 0o044) !== 0;
      const writable = (mode & 0o022) !== 0;
      if (!readable && !writable) continue;
      doors.push(
        `${file} (mode ${mode.toString(8).padStart(3, '0')}) can be ${readable && writable ? 'read and changed' : readable ? 'read' : 'changed'} by other users of this machine: ${[
          ...(readable
            ? ['its salted keys allow an offline dictionary attack on the passwords']
            : []),
          ...(writable ? [`they could give themselves ${secret ? 'a login' : 'access'}`] : []),
        ].join(', and ')} (chmod 600 it)`,
      );
    }
    for (const door of doors) this.#onWarning(`kafka server: ${door}`);
  }

  /** The SASL users. */
  get users(): UserCredentials {
    return this.#users;
  }

  /** What PLAIN checks an unknown user's password against. */
  get decoyVerifier(): ScramVerifier {
    return this.#decoyVerifier;
  }

  /** The authorizer; undefined when ACLs are not enforced. */
  get authorizer(): Authorizer | undefined {
    return this.#authorizer;
  }

  /**
   * Reads the users and ACLs again (after `offset-store users` or `acls` changed them). Nothing
   * changes when either file is damaged, or is gone when it was there at the last read: a deleted
   * ACL file would otherwise drop every DENY and ALLOW at once (with allowEveryoneIfNoAclFound,
   * open everything), a deleted users file every login. To remove them all, write empty lists
   * (`acls remove`, `users remove`). Reloads run one after another: one begun before another
   * (two SIGHUPs in a row) could otherwise read the files first and install what it read last,
   * putting back ACLs the files no longer hold.
   */
  reload(): Promise<void> {
    return this.#reloads.run(() => this.#reload());
  }

  async #reload(): Promise<void> {
    await this.#checkDirectory?.();
    const gone: string[] = [];
    for (const [name, had] of [
      [USERS_FILE, this.#users.size > 0],
      [ACLS_FILE, this.#aclCount > 0],
    ] as const)
      if (had && (await this.#fs.sizeBytes(path.join(this.#dir, name))) === null) gone.push(name);
    if (gone.length > 0)
      throw new OffsetStoreError(
        'INVALID_CONFIG',
        `${gone.map((name) => path.join(this.#dir, name)).join(' and ')} ${gone.length > 1 ? 'are' : 'is'} gone since the last read; the users and ACLs read then stay in force (to remove them all, write empty lists with offset-store users remove / acls remove)`,
      );
    const users = await UserCredentials.load(this.#fs, this.#dir);
    const acls = await AclSet.load(this.#fs, this.#dir);
    const decoyVerifier = await decoyVerifierOf(users);
    this.#users = users;
    this.#decoyVerifier = decoyVerifier;
    this.#aclCount = acls.acls.length;
    this.#authorizer = this.#authorizer?.withAcls(acls);
    await this.#warnOpenDoors();
  }

  /** True when an audit log is configured. */
  get auditing(): boolean {
    return this.#auditLog !== undefined;
  }

  /** Records an event in the audit log (if one is configured). */
  audit(event: {
    peer: { principal?: string; clientHost: string; listenerName?: string };
    api: string;
    outcome: 'allowed' | 'denied';
    reason?: string;
    resource?: string;
    operation?: string;
    user?: string;
  }): void {
    if (event.outcome === 'denied' && event.resource !== undefined) this.#denied++;
    if (this.#auditLog === undefined) return;
    const { peer, ...rest } = event;
    const line: AuditEvent = {
      principal: peer.principal ?? 'User:ANONYMOUS',
      clientHost: peer.clientHost,
      listener: peer.listenerName ?? 'PLAINTEXT',
      ...rest,
    };
    this.#auditLog.record(line);
  }

  /** Counts a new connection of `address`; false (not counted) when the address has too many. */
  connectionOpened(address: string): boolean {
    const count = this.#connectionsByAddress.get(address) ?? 0;
    if (count >= this.options.connectionsPerAddressMax) {
      this.#refusedConnections++;
      this.#warnRefused(address);
      return false;
    }
    this.#connectionsByAddress.set(address, count + 1);
    return true;
  }

  /**
   * Warns that a connection was refused for the per-address limit, at most once a minute, with the
   * count refused since the server started (the stats count them all): its clients see only closed
   * connections, which say nothing of why (many consumers of one host, or a test starting a
   * hundred, reach the default 100).
   */
  #warnRefused(address: string): void {
    const nowMs = this.clock.nowMs();
    if (nowMs - this.#refusalWarnedAtMs < REFUSAL_WARNING_INTERVAL_MS) return;
    this.#refusalWarnedAtMs = nowMs;
    this.#onWarning(
      `refused a connection from ${address} for the per-address limit (security.connectionsPerAddressMax, ${this.options.connectionsPerAddressMax}); ${this.#refusedConnections} refused since the server started (said at most once a minute; stats().security.refusedConnectionsPerAddress counts them): their clients see a closed connection, so raise the limit if they are many clients of one host`,
    );
  }

  /** Forgets a connection counted by `connectionOpened`. */
  connectionReleased(address: string): void {
    const count = this.#connectionsByAddress.get(address) ?? 0;
    if (count <= 1) this.#connectionsByAddress.delete(address);
    else this.#connectionsByAddress.set(address, count - 1);
  }

  /** Ends any authentication a closed connection had in progress. */
  sessionClosed(session: ConnectionSession): void {
    // A check or a failure delay in flight gives the slot back itself when it ends.
    if (session.throttled && !session.answering) {
      session.throttled = false;
      this.throttle.end(session.addressGroup);
    }
  }

  /** Counters. */
  stats(): SecurityStats {
    return {
      failedAuthentications: this.throttle.failedCount,
      refusedAuthentications: this.throttle.refusedCount,
      refusedConnectionsPerAddress: this.#refusedConnections,
      deniedOperations: this.#denied,
      throttledResponses: this.quotas.throttledCount,
      refusedGroupCreations: this.groupLimits?.refusedCount ?? 0,
    };
  }

  /** Waits for the audit log's writes. */
  async idle(): Promise<void> {
    await this.#auditLog?.idle();
  }

  /** Closes the audit log. */
  async close(): Promise<void> {
    await this.#auditLog?.close();
  }
}

/** A verifier of a random password, with the iterations most users have (PLAIN's decoy). */
function decoyVerifierOf(users: UserCredentials): Promise<ScramVerifier> {
  return scramVerifier('SCRAM-SHA-256', randomBytes(16).toString('base64'), {
    iterations: users.typicalIterations('SCRAM-SHA-256'),
  });
}

/** What openDoors needs of a listener. */
export interface ListenerSecurity {
  readonly name: string;
  readonly securityProtocol: SecurityProtocol;
  readonly tls?: { readonly requireClientCertificate?: boolean } | undefined;
}

/**
 * What a server's settings leave open that its security files suggest is meant closed: ACLs that no
 * authorizer enforces, SASL users that no listener asks for, and a listener serving clients that
 * have not authenticated (PLAINTEXT, or SSL without client certificates) beside a SASL listener
 * while whatever no ACL names is allowed (no authorizer, or allowEveryoneIfNoAclFound). Kafka
 * allows each, so none refuses a start; each is what an operator rarely means, so each is a
 * warning, at start and at every reload.
 */
export function openDoors(
  listeners: readonly ListenerSecurity[],
  authorizer: { readonly allowEveryoneIfNoAclFound: boolean } | undefined,
  counts: { readonly users: number; readonly acls: number },
): string[] {
  const doors: string[] = [];
  if (counts.acls > 0 && authorizer === undefined)
    doors.push(
      `the ${counts.acls} ACL(s) of ${ACLS_FILE} are not enforced: the server runs without an authorizer (security.authorizer; serve --authorizer), so every client may do everything`,
    );
  const sasl = listeners.filter((l) => usesSasl(l.securityProtocol));
  if (counts.users > 0 && sasl.length === 0)
    doors.push(
      `the ${counts.users} user(s) of ${USERS_FILE} are never asked for: no listener uses SASL, so clients are served without logging in`,
    );
  if (sasl.length > 0 && (authorizer === undefined || authorizer.allowEveryoneIfNoAclFound)) {
    for (const listener of listeners) {
      if (usesSasl(listener.securityProtocol) || listener.tls?.requireClientCertificate === true)
        continue;
      doors.push(
        `listener ${listener.name} (${listener.securityProtocol}) serves clients that have not authenticated (User:ANONYMOUS) beside SASL listener ${sasl.map((l) => l.name).join(', ')}: ${authorizer === undefined ? 'with no authorizer they may do everything a logged-in user may' : 'allowEveryoneIfNoAclFound lets them do whatever no ACL names'}`,
      );
    }
  }
  return doors;
}
