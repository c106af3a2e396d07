// A wrong strategy: its groups overlap (the first two sealed segments, then the second again).
export default {
  name: 'overlapping',
  plan(view) {
    const sealed = view.segments.filter((s) => s.sealed).map((s) => s.baseOffset);
    return sealed.length < 2 ? null : { rewrite: [[sealed[0], sealed[1]], [sealed[1]]] };
  },
};
