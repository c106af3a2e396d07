/**
 * Real etcd clusters for tests: 1 or 3 members of the `etcd` binary (Debian's etcd-server) on
 * 127.0.0.1, on ports found free by binding port 0 first, with temporary data directories. A test
 * starts what it needs and stops it after; members can be killed (SIGKILL), paused (SIGSTOP) and
 * restarted on the same ports and data, to test failures.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';

/** True when an `etcd` binary is on the PATH. */
export function etcdAvailable(): boolean {
  return spawnSync('etcd', ['--version'], { stdio: 'ignore' }).status === 0;
}

/** A port nothing listens on now (bound, then released). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

interface Member {
  name: string;
  clientPort: number;
  peerPort: number;
  dataDir: string;
  process: ChildProcess | undefined;
  log: string[];
}

/** Options of a test cluster. */
export interface EtcdClusterOptions {
  /** Members: 1 or 3. */
  members: 1 | 3;
  /** Backend quota in bytes (the NOSPACE alarm fires past it); default etcd's 2 GiB. */
  quotaBackendBytes?: number;
}

/** A running etcd cluster of 1 or 3 members. */
export class EtcdCluster {
  readonly #members: Member[];
  readonly #root: string;
  readonly #options: EtcdClusterOptions;

  private constructor(members: Member[], root: string, options: EtcdClusterOptions) {
    this.#members = members;
    this.#root = root;
    this.#options = options;
  }

  /**
   * Starts a new cluster and waits until every member is healthy. A free port is found by binding
   * port 0 and closing it, so another process may take it before etcd binds it: a member that exits
   * with "address already in use" starts the whole cluster over on new ports (a few times).
   */
  static async start(options: EtcdClusterOptions): Promise<EtcdCluster> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await EtcdCluster.#startOnce(options);
      } catch (error) {
        if (attempt >= 4 || !/address already in use/.test((error as Error).message)) throw error;
      }
    }
  }

  static async #startOnce(options: EtcdClusterOptions): Promise<EtcdCluster> {
    const root = mkdtempSync(path.join(tmpdir(), 'offset-store-etcd-'));
    const members: Member[] = [];
    for (let i = 1; i <= options.members; i++) {
      members.push({
        name: `e${i}`,
        clientPort: await freePort(),
        peerPort: await freePort(),
        dataDir: path.join(root, `e${i}`),
        process: undefined,
        log: [],
      });
    }
    const cluster = new EtcdCluster(members, root, options);
    try {
      for (const member of members) cluster.#spawn(member, 'new');
      await cluster.waitHealthy();
    } catch (error) {
      await cluster.stop();
      throw error;
    }
    return cluster;
  }

  /** Client URLs of every member. */
  get endpoints(): string[] {
    return this.#members.map((m) => `http://127.0.0.1:${m.clientPort}`);
  }

  /** Member names, e1.. */
  get memberNames(): string[] {
    return this.#members.map((m) => m.name);
  }

  #spawn(member: Member, state: 'new' | 'existing'): void {
    const initialCluster = this.#members
      .map((m) => `${m.name}=http://127.0.0.1:${m.peerPort}`)
      .join(',');
    const args = [
      '--name',
      member.name,
      '--data-dir',
      member.dataDir,
      '--listen-client-urls',
      `http://127.0.0.1:${member.clientPort}`,
      '--advertise-client-urls',
      `http://127.0.0.1:${member.clientPort}`,
      '--listen-peer-urls',
      `http://127.0.0.1:${member.peerPort}`,
      '--initial-advertise-peer-urls',
      `http://127.0.0.1:${member.peerPort}`,
      '--initial-cluster',
      initialCluster,
      '--initial-cluster-state',
      state,
      '--initial-cluster-token',
      path.basename(this.#root),
      '--heartbeat-interval',
      '100',
      '--election-timeout',
      '1000',
      '--log-level',
      'warn',
    ];
    if (this.#options.quotaBackendBytes !== undefined)
      args.push('--quota-backend-bytes', String(this.#options.quotaBackendBytes));
    const child = spawn('etcd', args, { stdio: ['ignore', 'ignore', 'pipe'] });
    child.stderr!.on('data', (chunk: Buffer) => {
      member.log.push(chunk.toString());
      if (member.log.length > 200) member.log.shift();
    });
    member.process = child;
  }

  /** Waits until every running member answers /health with health true (or `timeoutMs` passes). */
  async waitHealthy(timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (const member of this.#members) {
      if (member.process === undefined) continue;
      for (;;) {
        if (member.process.exitCode !== null)
          throw new Error(
            `etcd member ${member.name} exited (${member.process.exitCode}): ${member.log.join('').slice(-2000)}`,
          );
        try {
          const res = await fetch(`http://127.0.0.1:${member.clientPort}/health`, {
            signal: AbortSignal.timeout(1000),
          });
          const body = (await res.json()) as { health?: string };
          if (body.health === 'true') break;
        } catch {
          // not up yet
        }
        if (Date.now() > deadline)
          throw new Error(
            `etcd member ${member.name} not healthy after ${timeoutMs} ms: ${member.log.join('').slice(-2000)}`,
          );
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
  }

  /** The name of the current raft leader (asked of a running member). */
  async leader(): Promise<string> {
    for (const member of this.#members) {
      if (member.process === undefined) continue;
      try {
        const res = await fetch(`http://127.0.0.1:${member.clientPort}/v3/maintenance/status`, {
          method: 'POST',
          body: '{}',
          signal: AbortSignal.timeout(1000),
        });
        const body = (await res.json()) as { header: { member_id: string }; leader: string };
        if (body.leader === body.header.member_id) return member.name;
        const members = await fetch(
          `http://127.0.0.1:${member.clientPort}/v3/cluster/member/list`,
          { method: 'POST', body: '{}', signal: AbortSignal.timeout(1000) },
        );
        const list = (await members.json()) as { members: { ID: string; name: string }[] };
        const found = list.members.find((m) => m.ID === body.leader);
        if (found !== undefined) return found.name;
      } catch {
        // try the next member
      }
    }
    throw new Error('no etcd member knows a leader');
  }

  /** Sends `signal` to a member; SIGKILL also forgets the process (restart it with `restart`). */
  kill(name: string, signal: NodeJS.Signals = 'SIGKILL'): void {
    const member = this.#member(name);
    member.process?.kill(signal);
    if (signal === 'SIGKILL') member.process = undefined;
  }

  /** Restarts a killed member on its ports and data. */
  restart(name: string): void {
    const member = this.#member(name);
    if (member.process !== undefined) throw new Error(`member ${name} is running`);
    this.#spawn(member, 'existing');
  }

  /**
   * Restarts a killed member on its ports with its data removed: a 1-member cluster so comes back
   * empty (as etcd restored from nothing, or wiped by an operator), its revisions and leases gone.
   */
  restartEmpty(name: string): void {
    const member = this.#member(name);
    if (member.process !== undefined) throw new Error(`member ${name} is running`);
    if (this.#members.length !== 1) throw new Error('only a 1-member cluster restarts empty');
    rmSync(member.dataDir, { recursive: true, force: true });
    this.#spawn(member, 'new');
  }

  /**
   * Copies a killed member's data folder to a new folder and returns its path: a backup of a
   * stopped member, which `restartFrom` brings back.
   */
  copyData(name: string): string {
    const member = this.#member(name);
    if (member.process !== undefined) throw new Error(`member ${name} is running`);
    const copy = mkdtempSync(path.join(this.#root, `${name}-copy-`));
    cpSync(member.dataDir, copy, { recursive: true });
    return copy;
  }

  /**
   * Restarts a killed member on its ports with its data replaced by a copy `copyData` made: etcd
   * restored from a backup taken then (same cluster and member ids, its revisions rewound).
   */
  restartFrom(name: string, copy: string): void {
    const member = this.#member(name);
    if (member.process !== undefined) throw new Error(`member ${name} is running`);
    rmSync(member.dataDir, { recursive: true, force: true });
    cpSync(copy, member.dataDir, { recursive: true });
    this.#spawn(member, 'existing');
  }

  #member(name: string): Member {
    const member = this.#members.find((m) => m.name === name);
    if (member === undefined) throw new Error(`no member ${name}`);
    return member;
  }

  /** Stops every member (SIGKILL: tests do not need a clean etcd shutdown) and removes the data. */
  async stop(): Promise<void> {
    const exits: Promise<unknown>[] = [];
    for (const member of this.#members) {
      const child = member.process;
      if (child === undefined) continue;
      if (child.exitCode === null && child.signalCode === null) {
        exits.push(new Promise((resolve) => child.once('exit', resolve)));
        child.kill('SIGCONT');
        child.kill('SIGKILL');
      }
      member.process = undefined;
    }
    await Promise.all(exits);
    rmSync(this.#root, { recursive: true, force: true });
  }
}
