// A strategy whose plan a test supplies: in-process only (the test sets a function on globalThis,
// which a worker thread would not see). Records every view it is shown.
const hooks = (globalThis[Symbol.for('offset-store.test.scripted')] ??= {
  plan: () => null,
  views: [],
});

export default {
  name: 'scripted',
  due: () => false,
  async plan(view, inspector) {
    hooks.views.push(view);
    return hooks.plan(view, inspector);
  },
};
