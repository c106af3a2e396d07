/**
 * src/shard: one OffsetsBucket per offsets-bucket, owning its log, offsets table and group
 * coordinator, with the rules of the requests on its groups; loadable and unloadable on its own.
 * The store routes to it by `bucketFor(groupId)`. This file is the folder's door.
 */
export {
  OffsetsBucket,
  type BucketGroupDescription,
  type BucketGroupListing,
  type OffsetsBucketFigures,
  type OffsetsBucketOptions,
} from './offsets-bucket.js';
