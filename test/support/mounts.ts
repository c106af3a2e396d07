/**
 * Real file systems for tests that need one to fill up or fail: a tmpfs of a given size, or ext4 on
 * a loop device. Mounting needs root with the capability to mount (as on CI); the tests that use
 * these skip themselves where `canMount`/`canMountLoop` say no.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';

/** Whether this process may mount: root, and a tmpfs mounts and unmounts. */
export function canMount(): boolean {
  return (
    process.getuid?.() === 0 &&
    tryInScratch((at) => mountAndUnmount(['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs'], at))
  );
}

/** Whether this process may mount ext4 on a loop device (with mkfs.ext4, e2fsck and losetup). */
export function canMountLoop(): boolean {
  if (process.getuid?.() !== 0) return false;
  for (const tool of ['mkfs.ext4', 'e2fsck', 'losetup'])
    if (spawnSync(tool, ['-V']).error !== undefined) return false;
  return tryInScratch((at) => {
    const image = path.join(at, 'probe.img');
    execFileSync('truncate', ['-s', '8M', image]);
    execFileSync('mkfs.ext4', ['-q', '-F', image], { stdio: 'ignore' });
    mountAndUnmount(['-o', 'loop', image], path.join(at, 'm'));
  });
}

function tryInScratch(probe: (at: string) => void): boolean {
  const at = mkdtempSync(path.join(tmpdir(), 'offset-store-mount-'));
  try {
    probe(at);
    return true;
  } catch {
    return false;
  } finally {
    rmSync(at, { recursive: true, force: true });
  }
}

function mountAndUnmount(args: string[], at: string): void {
  mkdirSync(at, { recursive: true });
  execFileSync('mount', [...args, at], { stdio: 'ignore' });
  execFileSync('umount', [at]);
}

/** The file systems a test mounted, unmounted (last first) by `unmountAll` after it. */
export class Mounts {
  readonly #mounted: string[] = [];

  /** Mounts with `args` (e.g. ['-t', 'tmpfs', '-o', 'size=4m', 'tmpfs']) at `at`, made if missing. */
  mount(args: string[], at: string): string {
    mkdirSync(at, { recursive: true });
    execFileSync('mount', [...args, at]);
    this.#mounted.push(at);
    return at;
  }

  /** Unmounts `at` now (a test that needs the device released); false if it would not unmount. */
  unmount(at: string): boolean {
    const index = this.#mounted.lastIndexOf(at);
    if (index < 0) throw new Error(`${at} was not mounted here`);
    this.#mounted.splice(index, 1);
    return unmount(at);
  }

  /** Unmounts what was mounted, newest first; one that will not unmount is left (and reported). */
  unmountAll(): void {
    for (const at of this.#mounted.splice(0).reverse()) unmount(at);
  }
}

function unmount(at: string): boolean {
  const done = spawnSync('umount', [at], { encoding: 'utf8' });
  if (done.status !== 0) process.stderr.write(`umount ${at} failed: ${done.stderr}`);
  return done.status === 0;
}
