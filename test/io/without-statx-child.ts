/**
 * Child of without-statx.test.ts, run with the statx system call refused (so Node reads no birth
 * time and reports each file's ctime in its place): opens a store in argv[2], commits across many
 * segment rolls, compacts, closes, reopens and fetches; prints one line of JSON with what it saw.
 */
import { statSync, writeFileSync, chmodSync } from 'node:fs';
import * as path from 'node:path';
import { OffsetStore } from '../../src/index.js';

const dir = process.argv[2]!;

// Whether the refusal took: without statx, a file's reported birth time is its ctime, which a
// chmod moves.
const probe = path.join(path.dirname(dir), 'probe');
writeFileSync(probe, 'x');
const before = statSync(probe, { bigint: true });
await new Promise((resolve) => setTimeout(resolve, 30));
chmodSync(probe, 0o600);
const after = statSync(probe, { bigint: true });
const birthTimeFollowsCtime =
  after.birthtimeNs === after.ctimeNs && after.birthtimeNs !== before.birthtimeNs;

const BUCKETS = 4;
const COMMITS = 2000;
const store = await OffsetStore.open({ dir, bucketCount: BUCKETS, segmentBytesMax: 16 * 1024 });
for (let i = 0; i < COMMITS; i++) {
  await store.commitOffsets('g', [
    { tableId: 1, bucketId: i % 8, offset: i, metadata: 'm'.repeat(64) },
  ]);
}
const report = await store.compact();
await store.close();

const reopened = await OffsetStore.open({ dir, bucketCount: BUCKETS, segmentBytesMax: 16 * 1024 });
const fetched = await reopened.fetchOffsets(
  'g',
  Array.from({ length: 8 }, (_, bucketId) => ({ tableId: 1, bucketId })),
);
await reopened.close();

process.stdout.write(
  JSON.stringify({
    birthTimeFollowsCtime,
    compactedBuckets: report.buckets.length,
    bytesBefore: report.bytesBefore,
    bytesAfter: report.bytesAfter,
    offsets: fetched.map((f) => f?.offset ?? null),
  }) + '\n',
);
