/** The built-in 'none' strategy: never compacts (a control in benchmarks, or a store compacted elsewhere). */
import type { CompactionStrategyDefinition } from '../strategy.js';

/** Does nothing. */
export const noneStrategy: CompactionStrategyDefinition = {
  name: 'none',
  rewrites: false,
  due: () => false,
  plan: () => null,
};
