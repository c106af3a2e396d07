import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

/**
 * The tiers. `npm test` runs `fast`: unit, property and in-process store tests, about a minute and a
 * half on 2 cores, its randomized and exhaustive tests shallow (test/support/test-depth.ts; `npm run
 * test:fuzz` runs those files again, deep: the `fuzz` tier). Its files share one module graph per
 * worker (`isolate: false`: loading the store's modules
 * for each of ~100 files took more time than their tests) and run on at least two workers (vitest's
 * default of one fewer than the cores is one on 2 cores, where most tests wait on fdatasync or on a
 * socket). Each file still gets its own setup (test/support/no-stray-warnings.ts checks after every
 * test); a test that changes process-wide state (a listener on `process`) undoes it. `npm run test:slow` runs `slow`: tests that fork processes and kill them (crash, power
 * loss, lock, a process at its open-file or address-space limit, a store with statx refused), run
 * the CLI as a child process,
 * build the package, run the compaction lab's experiments, run long compactions to watch the
 * workers' scheduling, or wait out a real client's own multi-second timers (kafkajs's admin
 * setOffsets). `npm run test:cluster` runs `cluster`: tests
 * against real etcd clusters (the `etcd` binary, started and stopped by each test file), one file at
 * a time. `npm run test:browser` runs `browser`: the lab's HTML report in headless chromium;
 * `npm run test:librdkafka` the `librdkafka` tier below. CI (`.ci/run`) runs all six.
 */
const SLOW = [
  'test/crash/**/*.test.ts',
  'test/build/**/*.test.ts',
  'test/cli/cli-commands.test.ts',
  'test/cli/cli-demo.test.ts',
  'test/cli/cli-errors.test.ts',
  'test/cli/cli-serve.test.ts',
  'test/cli/cli-security.test.ts',
  'test/kafka/clients/kafkajs-admin-offsets.test.ts',
  'test/log/directory-lock.test.ts',
  'test/io/without-statx.test.ts',
  'test/io/syscall-faults.test.ts',
  'test/io/sync-calls.test.ts',
  'test/kv/checkpoint-damage.test.ts',
  'test/kv/checkpoint-no-room.test.ts',
  'test/compaction/unprivileged-workers.test.ts',
  'test/compaction/worker-priority.test.ts',
  'test/store/process-limits.test.ts',
  'test/store/read-only-live-writer.test.ts',
  'test/lab/lab-run.test.ts',
  'test/cli/cli-lab.test.ts',
];

/**
 * The files whose randomized or exhaustive tests go deeper in the `fuzz` tier
 * (test/support/test-depth.ts): `npm test` runs them shallow, `npm run test:fuzz` again, deep. CI
 * runs both.
 */
const FUZZ = [
  'test/compaction/compaction.test.ts',
  'test/compaction/incremental-cleaner.test.ts',
  'test/group/snapshot-estimate.test.ts',
  'test/log/log.test.ts',
  'test/property/store-model.test.ts',
];

const CLUSTER = ['test/cluster/**/*.test.ts'];
const FAST_WORKERS = Math.max(2, availableParallelism() - 1);
const BROWSER = ['test/browser/**/*.test.ts'];

/**
 * `npm run test:librdkafka` runs `librdkafka`: librdkafka through @confluentinc/kafka-javascript, a
 * native addon built into test/librdkafka/node_modules by test/librdkafka/install.sh (not a
 * dependency of the package). CI runs it too.
 */
const LIBRDKAFKA = ['test/librdkafka/**/*.test.ts'];

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    setupFiles: ['test/support/no-stray-warnings.ts'],
    projects: [
      {
        extends: true,
        test: {
          name: 'fast',
          isolate: false,
          maxWorkers: FAST_WORKERS,
          // Its own group (run before the others) when several tiers run in one command: vitest
          // runs projects of different maxWorkers only in different groups.
          sequence: { groupOrder: 0 },
          include: ['test/**/*.test.ts'],
          exclude: [...SLOW, ...CLUSTER, ...BROWSER, ...LIBRDKAFKA],
        },
      },
      { extends: true, test: { name: 'slow', include: SLOW, sequence: { groupOrder: 1 } } },
      {
        extends: true,
        test: {
          name: 'fuzz',
          include: FUZZ,
          env: { OFFSET_STORE_TEST_DEPTH: 'deep' },
          sequence: { groupOrder: 1 },
        },
      },
      {
        extends: true,
        test: {
          name: 'cluster',
          include: CLUSTER,
          fileParallelism: false,
          sequence: { groupOrder: 2 },
        },
      },
      {
        extends: true,
        test: {
          name: 'browser',
          include: BROWSER,
          testTimeout: 180_000,
          sequence: { groupOrder: 3 },
        },
      },
      {
        extends: true,
        test: { name: 'librdkafka', include: LIBRDKAFKA, sequence: { groupOrder: 4 } },
      },
    ],
  },
});
