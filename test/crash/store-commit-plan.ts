/**
 * What the store crash test's child commits, as a pure function of the commit number, so that the
 * parent can recompute any commit (acknowledged or not) from a fetched offset alone.
 *
 * Committer j of `COMMITTERS` owns the groups j, j + COMMITTERS, ...; its commits are numbered
 * base + j, base + j + COMMITTERS, ... and issued one after another, so the commits of any one key
 * carry increasing numbers. A commit writes offset = its number and metadata = `c<number>` to 1-20
 * distinct buckets of one group.
 */
import { seededRandom } from '../support/seeded-random.js';

export const COMMITTERS = 8;
export const GROUP_COUNT = 24;
export const BUCKET_COUNT = 4;
/** Commit numbers of round r start at r * ROUND_STRIDE (a multiple of COMMITTERS). */
export const ROUND_STRIDE = 1_000_000;

const POOL = [
  ...Array.from({ length: 16 }, (_, b) => ({
    tableId: 1,
    partitionId: null as number | null,
    bucketId: b,
  })),
  ...Array.from({ length: 24 }, (_, i) => ({
    tableId: 2,
    partitionId: (i % 3) as number | null,
    bucketId: Math.floor(i / 3),
  })),
];

export function groupName(index: number): string {
  return `crash-group-${index}`;
}

export interface PlannedCommit {
  n: number;
  groupId: string;
  offsets: {
    tableId: number;
    partitionId: number | null;
    bucketId: number;
    offset: number;
    leaderEpoch: number;
    metadata: string;
  }[];
}

export function plannedCommit(seed: number, n: number): PlannedCommit {
  const random = seededRandom((seed ^ Math.imul(n, 0x9e3779b1)) >>> 0);
  const committer = n % COMMITTERS;
  const group = committer + COMMITTERS * Math.floor(random() * (GROUP_COUNT / COMMITTERS));
  const pool = [...POOL];
  const count = 1 + Math.floor(random() * 20);
  const offsets: PlannedCommit['offsets'] = [];
  for (let i = 0; i < count; i++) {
    const [bucket] = pool.splice(Math.floor(random() * pool.length), 1);
    offsets.push({ ...bucket!, offset: n, leaderEpoch: n % 1000, metadata: `c${n}` });
  }
  return { n, groupId: groupName(group), offsets };
}
