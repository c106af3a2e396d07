// A hostile strategy: its name is valid on the first two reads and not afterwards (a store that
// recorded a later read could not be opened again).
let reads = 0;

export default {
  get name() {
    reads += 1;
    return reads <= 2 ? 'shifting' : 'not a valid name!';
  },
  plan() {
    return null;
  },
};
