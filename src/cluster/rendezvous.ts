/**
 * Rendezvous (highest-random-weight) hashing of offsets-buckets over live nodes: each bucket goes to
 * the node with the highest xxh32(nodeId + '/' + bucket). When a node joins or leaves, only the
 * buckets it wins or held move (about 1/n of them), and every node computes the same answer from
 * the same list of nodes, with no coordination.
 */
import { xxh32 } from '../codec/index.js';

/** The node `bucket` should live on, among `nodeIds` (undefined when there is none). */
export function rendezvousOwner(bucket: number, nodeIds: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestWeight = -1;
  for (const nodeId of nodeIds) {
    const key = Buffer.from(`${nodeId}/${bucket}`);
    const weight = xxh32(key, 0, key.length);
    if (weight > bestWeight || (weight === bestWeight && best !== undefined && nodeId < best)) {
      best = nodeId;
      bestWeight = weight;
    }
  }
  return best;
}
