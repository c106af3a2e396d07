/**
 * The simulator runs the real store on the simulated disk and clock: one seed is one run, byte for
 * byte (the same logs on the disk, the same trace), and a few seeds of each fault profile find
 * nothing. The long runs, the swarm and the regression seeds are `npm run sim` (and CI's sim tier).
 * SIM_TEST_SEED picks the first seed (default 7); a failure names the seed to replay.
 */
import { describe, expect, it } from 'vitest';
import { simulate, type SimOptions } from '../../sim/simulator.js';

const FIRST = Number(process.env.SIM_TEST_SEED ?? 7);

function replay(options: SimOptions): string {
  return `npm run sim -- --seed ${options.seed} --ops ${options.ops} --faults ${options.faults}${options.swarm ? ' --swarm' : ''}`;
}

describe('the simulator', () => {
  it('replays a seed exactly: the same disk, byte for byte, and the same trace', async () => {
    const options: SimOptions = { seed: FIRST, ops: 300, faults: 'all', swarm: true };
    const first = await simulate(options);
    const second = await simulate(options);
    expect(first.digest, replay(options)).toBe(second.digest);
    expect(first.trace.map(withoutTempDir)).toEqual(second.trace.map(withoutTempDir));
    expect(first.steps).toBe(second.steps);
  });

  it.each(['crash', 'io', 'rest'] as const)(
    'finds nothing in a run with the %s fault profile',
    async (faults) => {
      const options: SimOptions = { seed: FIRST + faults.length, ops: 400, faults };
      const result = await simulate(options);
      expect(
        result.ok,
        `${result.message}\n${result.trace.join('\n')}\nreplay: ${replay(options)}`,
      ).toBe(true);
      expect(result.ops + result.crashes + result.powerLosses).toBeGreaterThan(0);
    },
  );

  it('checks read-only views opened beside the live process against the model', async () => {
    const options: SimOptions = {
      seed: FIRST,
      ops: 400,
      faults: 'crash',
      viewChance: 0.1,
      lazyOpenShare: 0.5,
    };
    const result = await simulate(options);
    expect(
      result.ok,
      `${result.message}\n${result.trace.join('\n')}\nreplay: ${replay(options)} --view-chance 0.1 --lazy-open-share 0.5`,
    ).toBe(true);
    expect(result.viewsChecked).toBeGreaterThan(10);
  });
});

function withoutTempDir(line: string): string {
  return line.replace(/offset-store-sim-[A-Za-z0-9]+/g, 'sim');
}
