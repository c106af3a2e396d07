/** `offset-store cluster status`: a cluster's live nodes and, per offsets-bucket, its owner, epoch, placement and log in etcd. */
import { ClusterKeys, EtcdConnection, clusterStatus } from '../../cluster/index.js';
import {
  EXIT,
  UsageError,
  etcdEndpointsOption,
  noPositionals,
  stringOption,
  type Command,
} from '../command.js';

/** The `cluster status` command. */
export const clusterStatusCommand: Command = {
  words: ['cluster', 'status'],
  positionals: [],
  summary: "a cluster's nodes, and each offsets-bucket's owner, epoch and log in etcd",
  description: [
    "Reads a cluster's state from etcd (nothing is changed): the live nodes with their Kafka addresses,",
    "the topics of the cluster's catalog (table, partitions, topic id),",
    'and per offsets-bucket its owner and coordinator epoch (none while it moves between nodes), the node',
    "rendezvous hashing places it on, its next log offset, its checkpoint's log offset and the batches of",
    'its log still in etcd. --dir is not used. See docs/cluster.md.',
  ].join('\n'),
  options: {
    etcd: {
      type: 'string',
      valueName: '<urls>',
      description: 'etcd client URLs, comma-separated (required)',
    },
    'etcd-prefix': {
      type: 'string',
      valueName: '<prefix>',
      description: 'key prefix of the cluster in etcd (default /offset-store/)',
    },
  },
  examples: [
    'offset-store cluster status --etcd http://127.0.0.1:2379',
    'offset-store cluster status --etcd http://127.0.0.1:2379 --json',
  ],
  defaultDir: '.',
  async run(context) {
    noPositionals(context);
    const endpoints = etcdEndpointsOption(context);
    if (endpoints === undefined) throw new UsageError('--etcd <urls> is required');
    let keys: ClusterKeys;
    try {
      keys = new ClusterKeys(stringOption(context, 'etcd-prefix'));
    } catch (error) {
      if (error instanceof RangeError) throw new UsageError(`--etcd-prefix: ${error.message}`);
      throw error;
    }
    const connection = new EtcdConnection({ endpoints });
    try {
      const status = await clusterStatus(connection, keys);
      const { output } = context;
      if (output.json) {
        output.result(status);
        return EXIT.OK;
      }
      output.line(`${status.nodes.length} live node(s), ${status.bucketCount} offsets-buckets`);
      // No node ever recorded the cluster's configuration there: most likely a mistyped prefix.
      if (status.bucketCount === 0)
        output.line(
          `no cluster was ever started under the prefix ${keys.prefix} in this etcd (is --etcd-prefix right?)`,
        );
      output.table(
        [{ header: 'NODE' }, { header: 'BROKER-ID', align: 'right' }, { header: 'ADDRESS' }],
        status.nodes.map((n) => [n.nodeId, String(n.brokerId), `${n.host}:${n.port}`]),
      );
      output.line();
      output.line(
        `${status.topics.length} topic(s)${status.clusterId === undefined ? '' : `, cluster id ${status.clusterId}`}`,
      );
      if (status.topics.length > 0)
        output.table(
          [
            { header: 'TOPIC' },
            { header: 'TABLE', align: 'right' },
            { header: 'PARTITIONS', align: 'right' },
            { header: 'TOPIC-ID' },
          ],
          status.topics.map((t) => [t.name, String(t.tableId), String(t.partitions), t.topicId]),
        );
      output.line();
      output.table(
        [
          { header: 'BUCKET', align: 'right' },
          { header: 'OWNER' },
          { header: 'EPOCH', align: 'right' },
          { header: 'PLACED-ON' },
          { header: 'NEXT-LOG-OFFSET', align: 'right' },
          { header: 'CHECKPOINT', align: 'right' },
          { header: 'LOG-BATCHES', align: 'right' },
        ],
        status.buckets.map((b) => [
          String(b.bucket),
          b.owner?.nodeId ?? '-',
          b.owner === undefined ? '-' : String(b.owner.epoch),
          b.assignedTo ?? '-',
          String(b.nextLogOffset),
          String(b.checkpointLogOffset),
          String(b.logBatches),
        ]),
      );
      return EXIT.OK;
    } finally {
      connection.close();
    }
  },
};
