/**
 * src/errors: the error code table and OffsetStoreError, below every other layer so that every
 * layer raises the same codes. Programmer mistakes stay TypeError/RangeError and never get a code.
 * This file is the folder's door.
 */
export { ERROR_CODES, type ErrorCode, type ErrorCodeInfo } from './error-codes.js';
export {
  OffsetStoreError,
  isOffsetStoreError,
  messageWithoutCode,
  reasonOf,
} from './offset-store-error.js';
