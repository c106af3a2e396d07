// A kafkajs consumer group with offset-store as its group coordinator and offset store, in one
// process. Run it with `node kafkajs.mjs [store directory]` where offset-store and kafkajs are
// installed (`npm install offset-store kafkajs`); it takes a few seconds, most of them the group's
// initial rebalance delay (3 s, as Kafka's group.initial.rebalance.delay.ms).
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { OffsetStore, startKafkaServer } from 'offset-store';

const dir = process.argv[2] ?? mkdtempSync(path.join(tmpdir(), 'offsets-'));
const store = await OffsetStore.open({ dir });
// Port 0 picks a free port. A topic is a table of the store; its partitions are buckets.
const server = await startKafkaServer({
  store,
  port: 0,
  topics: [{ name: 'orders', partitions: 3 }],
});
const kafka = new Kafka({ clientId: 'example', brokers: server.brokers, logLevel: logLevel.WARN });

// An empty partition's fetch is answered after maxWaitTimeInMs (kafkajs: 5 s), as a broker does,
// and disconnecting waits for it: a short wait keeps this example quick.
const consumer = kafka.consumer({ groupId: 'billing', maxWaitTimeInMs: 500 });
const joined = new Promise((resolve) => consumer.on(consumer.events.GROUP_JOIN, resolve));
await consumer.connect();
await consumer.subscribe({ topics: ['orders'] });
// The server keeps no records: every partition reads as empty, so eachMessage is never called.
await consumer.run({ eachMessage: async () => {} });
const { payload } = await joined;
console.log(`joined ${payload.groupId}: orders partitions ${payload.memberAssignment.orders}`);

// What a consumer commits after processing, durable in the store once this resolves.
await consumer.commitOffsets([{ topic: 'orders', partition: 0, offset: '42' }]);

const admin = kafka.admin();
await admin.connect();
const [orders] = await admin.fetchOffsets({ groupId: 'billing', topics: ['orders'] });
const offsets = orders.partitions
  .sort((a, b) => a.partition - b.partition)
  .map((p) => `${p.partition}=${p.offset}`);
console.log(`committed: orders ${offsets.join(' ')}`); // -1: nothing committed
const { groups } = await admin.listGroups();
console.log(`groups: ${groups.map((g) => `${g.groupId} (${g.protocolType})`).join(', ')}`);

await admin.disconnect();
await consumer.disconnect();
await server.close({ closeStore: true });
console.log(`the offsets are in ${dir}`);
