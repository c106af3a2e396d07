// The scripted strategy (scripted.mjs), declaring rewrites: false: its plan runs on the main thread
// whatever the file system. Its `due` is the test's too (`hooks.due`), false when none is set.
const hooks = (globalThis[Symbol.for('offset-store.test.scripted')] ??= {
  plan: () => null,
  views: [],
});

export default {
  name: 'scripted-planner',
  rewrites: false,
  due: (view) => (hooks.due === undefined ? false : hooks.due(view)),
  async plan(view, inspector) {
    hooks.views.push(view);
    return hooks.plan(view, inspector);
  },
};
