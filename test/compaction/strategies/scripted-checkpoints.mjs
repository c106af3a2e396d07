// The scripted strategy (scripted.mjs), declaring checkpoints: for plans that write or delete below them.
const hooks = (globalThis[Symbol.for('offset-store.test.scripted')] ??= {
  plan: () => null,
  views: [],
});

export default {
  name: 'scripted',
  checkpoints: true,
  due: () => false,
  async plan(view, inspector) {
    hooks.views.push(view);
    return hooks.plan(view, inspector);
  },
};
