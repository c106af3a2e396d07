import { defineConfig } from 'vitest/config';

/**
 * Three tiers. `npm test` runs `fast`: unit, property and in-process store tests, about a minute on 2
 * cores. `npm run test:slow` runs `slow`: tests that fork processes and kill them (crash, power
 * loss, lock), run the CLI as a child process, or build the package. `npm run test:browser` runs
 * `browser`: the lab's HTML report in headless chromium. CI (`.ci/run`) runs all three.
 */
const SLOW = [
  'test/crash/**/*.test.ts',
  'test/build/**/*.test.ts',
  'test/cli/cli-commands.test.ts',
  'test/cli/cli-demo.test.ts',
  'test/cli/cli-errors.test.ts',
  'test/cli/cli-serve.test.ts',
  'test/cli/cli-security.test.ts',
  'test/log/directory-lock.test.ts',
  'test/kv/checkpoint-damage.test.ts',
];

const BROWSER = ['test/browser/**/*.test.ts'];

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    setupFiles: ['test/support/no-stray-warnings.ts'],
    projects: [
      { extends: true, test: { name: 'fast', include: ['test/**/*.test.ts'], exclude: [...SLOW, ...BROWSER] } },
      { extends: true, test: { name: 'slow', include: SLOW } },
      { extends: true, test: { name: 'browser', include: BROWSER, testTimeout: 180_000 } },
    ],
  },
});
