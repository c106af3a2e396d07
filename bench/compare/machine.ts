/**
 * What the numbers were measured on: CPU, cores, memory, kernel, Node, the file system holding the
 * stores, and the disk's durable-write floor (append 4 KiB + fdatasync, back to back), the ceiling on
 * sequential durable commits/s that no store can beat without group commit.
 *
 * Expected floor: ~0.2-2 ms per write+fdatasync on a VM or SSD; ~µs on tmpfs (where fsync is a no-op
 * and the comparison is meaningless, hence the warning).
 */
import {
  closeSync,
  fdatasyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeSync,
} from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { LatencyHistogram } from './latency-histogram.js';

/** The machine a run was measured on. */
export interface MachineDescription {
  cpuModel: string;
  cores: number;
  memoryGiB: number;
  platform: string;
  kernel: string;
  node: string;
  /** 1-minute load average when the run started: above the core count, other work skews the numbers. */
  loadAverage: number;
  dataDir: string;
  fileSystem: string;
  diskFloor: DiskFloor;
}

/** Back-to-back 4 KiB append + fdatasync on the data directory's file system. */
export interface DiskFloor {
  syncsPerSecond: number;
  meanUs: number;
  p50Us: number;
  p99Us: number;
}

/** Describes this machine; measures the disk floor in `dataDir` for `floorMs`. */
export function describeMachine(dataDir: string, floorMs: number): MachineDescription {
  mkdirSync(dataDir, { recursive: true });
  const cpus = os.cpus();
  return {
    cpuModel: cpus[0]?.model.trim() ?? 'unknown',
    cores: os.availableParallelism(),
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    platform: `${os.platform()} ${os.arch()}`,
    kernel: os.release(),
    node: process.version,
    loadAverage: Math.round((os.loadavg()[0] ?? 0) * 100) / 100,
    dataDir,
    fileSystem: fileSystemOf(dataDir),
    diskFloor: measureDiskFloor(dataDir, floorMs),
  };
}

/** One line for terminal and markdown headers. */
export function machineLine(m: MachineDescription): string {
  return (
    `${m.cpuModel}, ${m.cores} cores, ${m.memoryGiB} GiB, ${m.platform} ${m.kernel}, Node ${m.node}, load ${m.loadAverage} at start, ` +
    `stores on ${m.fileSystem}; disk floor ${m.diskFloor.meanUs.toFixed(0)} µs per 4 KiB write+fdatasync ` +
    `(${Math.round(m.diskFloor.syncsPerSecond)}/s, p99 ${m.diskFloor.p99Us.toFixed(0)} µs)`
  );
}

/** The file system type and device of the mount holding `dir`, from /proc/mounts. */
export function fileSystemOf(dir: string): string {
  let mounts: string;
  try {
    mounts = readFileSync('/proc/mounts', 'utf8');
  } catch {
    return 'unknown (no /proc/mounts)';
  }
  const path = realpathSync(dir);
  let best: { mountPoint: string; type: string; device: string } | undefined;
  for (const line of mounts.split('\n')) {
    const [device, mountPoint, type] = line.split(' ');
    if (device === undefined || mountPoint === undefined || type === undefined) continue;
    const inside =
      path === mountPoint ||
      path.startsWith(mountPoint.endsWith('/') ? mountPoint : `${mountPoint}/`);
    if (inside && (best === undefined || mountPoint.length > best.mountPoint.length))
      best = { mountPoint, type, device };
  }
  return best === undefined ? 'unknown' : `${best.type} (${best.device} at ${best.mountPoint})`;
}

function measureDiskFloor(dataDir: string, floorMs: number): DiskFloor {
  const dir = join(dataDir, `disk-floor-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  const fd = openSync(join(dir, 'floor.bin'), 'w');
  const block = Buffer.alloc(4096, 0xab);
  const histogram = new LatencyHistogram();
  try {
    const deadline = performance.now() + floorMs;
    let position = 0;
    while (performance.now() < deadline || histogram.count < 10) {
      const t0 = process.hrtime.bigint();
      writeSync(fd, block, 0, block.length, position);
      fdatasyncSync(fd);
      histogram.record(Number(process.hrtime.bigint() - t0));
      position += block.length;
    }
  } finally {
    closeSync(fd);
    rmSync(dir, { recursive: true, force: true });
  }
  return {
    syncsPerSecond: 1e9 / histogram.meanNs,
    meanUs: histogram.meanNs / 1000,
    p50Us: histogram.quantileNs(0.5) / 1000,
    p99Us: histogram.quantileNs(0.99) / 1000,
  };
}
