// The scripted strategy (scripted.mjs), declaring rewrites: false: its plan runs on the main thread
// whatever the file system.
const hooks = (globalThis[Symbol.for('offset-store.test.scripted')] ??= {
  plan: () => null,
  views: [],
});

export default {
  name: 'scripted-planner',
  rewrites: false,
  due: () => false,
  async plan(view, inspector) {
    hooks.views.push(view);
    return hooks.plan(view, inspector);
  },
};
