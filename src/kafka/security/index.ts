/**
 * src/kafka/security: who may connect and what they may do. Listeners and TLS (listener.ts), SASL
 * authentication with PLAIN and SCRAM (sasl-handlers.ts, scram.ts) against the users of the store
 * directory (user-credentials.ts), per-connection identity (connection-session.ts), ACLs and their
 * authorizer (acl.ts, authorizer.ts, authorizing-handlers.ts), limits on logins and connections per
 * address (login-throttle.ts, server-security.ts), and the audit log (audit-log.ts). This file is
 * the folder's door.
 */
export {
  ACLS_FILE,
  ACL_OPERATIONS,
  AclSet,
  aclProblem,
  type AclBinding,
  type AclOperation,
  type AclPatternType,
  type AclPermission,
  type AclResourceType,
} from './acl.js';
export { AuditLog, type AuditEvent } from './audit-log.js';
export { Authorizer, type AuthorizerSettings } from './authorizer.js';
export { ANONYMOUS, ConnectionSession, type SessionState } from './connection-session.js';
export {
  SASL_MECHANISMS,
  SECURITY_PROTOCOLS,
  caCertificatesProblem,
  parseListenerAddress,
  resolveListener,
  usesSasl,
  usesTls,
  type ListenerOptions,
  type ListenerTlsOptions,
  type ResolvedListener,
  type SaslMechanism,
  type SecurityProtocol,
} from './listener.js';
export {
  LOGIN_THROTTLE_DEFAULTS,
  LoginThrottle,
  type LoginThrottleSettings,
} from './login-throttle.js';
export { saslHandlers } from './sasl-handlers.js';
export {
  SCRAM_ITERATIONS_MAX,
  SCRAM_ITERATIONS_MIN,
  SCRAM_MECHANISMS,
  ScramServerExchange,
  scramPasswordMatches,
  scramVerifier,
  type ScramMechanism,
  type ScramVerifier,
} from './scram.js';
export {
  ServerSecurity,
  openDoors,
  resolveSecurityOptions,
  type ListenerSecurity,
  type ResolvedSecurityOptions,
  type SecurityOptions,
  type SecurityStats,
} from './server-security.js';
export {
  USERS_FILE,
  UserCredentials,
  userNameProblem,
  type UserListing,
} from './user-credentials.js';
export { certificatePrincipal } from './certificate-principal.js';
export { authorizingHandlers } from './authorizing-handlers.js';
export { ClientQuotas, type QuotaLimits, type QuotaOptions } from './client-quotas.js';
export { GroupLimits, groupLimitHandlers } from './group-limits.js';
