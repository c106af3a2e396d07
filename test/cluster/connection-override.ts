/**
 * An EtcdConnection with some of its calls replaced (to inject what another node or etcd does
 * between two calls), every other member the connection's own.
 */
import type { EtcdConnection } from '../../src/cluster/index.js';

/** `connection`, with the calls in `calls` replaced. */
export function overrideConnection(
  connection: EtcdConnection,
  calls: Partial<Pick<EtcdConnection, 'range' | 'txn'>>,
): EtcdConnection {
  return new Proxy(connection, {
    get: (target, name) => {
      const replaced = (calls as Record<string | symbol, unknown>)[name];
      if (replaced !== undefined) return replaced;
      const value = Reflect.get(target, name) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
