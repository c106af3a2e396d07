// A compaction strategy in the style of the log-structured file system's cleaner (Rosenblum and
// Ousterhout, 1992): each run rewrites the sealed segments with the best benefit / cost, within a
// byte budget, instead of the whole log.
//
//   benefit / cost = (1 - u) * age / (1 + u)
//
// u is the share of the segment that would survive (read 1, write u, gain 1 - u), age the time since
// its newest batch: old segments are cold and stay clean once cleaned, so they are worth more.
//
// Use it with: OffsetStore.open({ dir, compaction: { strategy: './examples/compaction/cost-benefit.mjs' } })
// or: offset-store lab --strategies incremental,./examples/compaction/cost-benefit.mjs

/** Most bytes of segments one run rewrites, in segments of the store's size. */
const BUDGET_SEGMENTS = 4;
/** Segments that would keep more than this share are not worth a rewrite. */
const SURVIVING_MAX = 0.8;

/** @type {import('offset-store').CompactionStrategyDefinition} */
export default {
  name: 'cost-benefit',

  // `due` is left out: the default runs a background pass once the bucket's estimated garbage ratio
  // reaches compaction.minDirtyRatio (or its log passes compaction.logBytesMax).

  async plan(view, inspector) {
    const sealed = view.segments.filter((s) => s.sealed);
    if (sealed.length === 0) return null;
    // Map the keys of the whole log, so that every superseded record is counted.
    const mapFrom = sealed[0].baseOffset;
    const garbage = await inspector.segmentGarbage({ mapFrom });
    const scored = garbage
      .map((g) => {
        const u = g.sizeBytes === 0 ? 1 : 1 - (g.supersededBytes + g.expiredTombstoneBytes) / g.sizeBytes;
        const ageMs = Math.max(1, view.nowMs - g.newestCommitMs);
        return { g, u, score: ((1 - u) * ageMs) / (1 + u) };
      })
      .filter((s) => s.u <= SURVIVING_MAX)
      .sort((a, b) => b.score - a.score);

    // The best segments within the budget...
    const picked = [];
    let budget = BUDGET_SEGMENTS * view.settings.segmentBytesMax;
    for (const { g } of scored) {
      if (g.sizeBytes > budget) break;
      budget -= g.sizeBytes;
      picked.push(g.baseOffset);
    }
    if (picked.length === 0) return null;

    // ...in log order, adjacent ones merged into one group (groups must be runs of adjacent segments).
    picked.sort((a, b) => a - b);
    const position = new Map(sealed.map((s, i) => [s.baseOffset, i]));
    const groups = [];
    for (const base of picked) {
      const last = groups.at(-1);
      const here = position.get(base) ?? -1;
      if (last !== undefined && position.get(last[last.length - 1]) === here - 1) last.push(base);
      else groups.push([base]);
    }
    return { rewrite: groups, mapFrom };
  },
};
