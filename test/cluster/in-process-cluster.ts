/**
 * What the tests of nodes run in the test's own process share: a list of cleanups run (last first)
 * after each test, whatever it left running, and a one-member etcd stopped after the test.
 */
import { afterEach } from 'vitest';
import { EtcdCluster } from '../support/etcd-cluster.js';

/** Run after each test, last first; a cleanup's failure does not stop the others. */
export const cleanups: (() => Promise<unknown>)[] = [];

afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
});

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** An etcd of one member, stopped after the test. */
export async function startEtcd(): Promise<EtcdCluster> {
  const etcd = await EtcdCluster.start({ members: 1 });
  cleanups.push(() => etcd.stop());
  return etcd;
}
