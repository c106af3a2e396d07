// A wrong strategy: its state nests 5,000 arrays deep (about 10 KB of JSON, well within the size
// limit). A worker thread can serialize it; the main thread cannot copy it back.
export default {
  name: 'deep-state',
  plan() {
    let state = [];
    for (let i = 0; i < 5000; i++) state = [state];
    return { state };
  },
};
