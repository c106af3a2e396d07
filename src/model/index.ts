/**
 * src/model: the values every layer shares, each with one home for its rules: the group id and the
 * bucket reference. Validated once at the public edge; inner layers trust them. Depends only on
 * errors and util, so every other folder may import it.
 */
export {
  GROUP_ID_BYTES_MAX,
  NOT_WELL_FORMED,
  checkWellFormed,
  cutWellFormed,
  validateGroupId,
} from './group-id.js';
export {
  BUCKET_ID_MAX,
  bucketKey,
  checkBucket,
  compareBucketRefs,
  formatBucketRef,
  invalidBucket,
  isValidBucket,
  normalizeBucketRef,
  type TableBucket,
  type BucketRef,
} from './bucket-ref.js';
