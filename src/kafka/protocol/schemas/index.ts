/**
 * The message tables, one file per API. They describe Apache Kafka's protocol as its JSON message
 * schemas define it (Kafka trunk, October 2024: the 4.0 line), rewritten in this project's own table
 * form (../schema.ts); field names are Kafka's in camelCase.
 */
export * from './api-versions.js';
export * from './consumer-group-describe.js';
export * from './consumer-group-heartbeat.js';
export * from './delete-groups.js';
export * from './describe-groups.js';
export * from './fetch.js';
export * from './find-coordinator.js';
export * from './heartbeat.js';
export * from './join-group.js';
export * from './leave-group.js';
export * from './list-groups.js';
export * from './list-offsets.js';
export * from './metadata.js';
export * from './offset-commit.js';
export * from './offset-delete.js';
export * from './offset-fetch.js';
export * from './produce.js';
export * from './sasl-authenticate.js';
export * from './sasl-handshake.js';
export * from './sync-group.js';
