export { ERROR_CODES, type ErrorCode, type ErrorCodeInfo } from './error-codes.js';
export { OffsetStoreError, isOffsetStoreError } from './offset-store-error.js';
