/**
 * The principal of a TLS client that presented a verified certificate: `User:` and the certificate's
 * subject as RFC 2253 writes a distinguished name (most specific first: `CN=alice,OU=eng,O=acme`),
 * which is what Kafka's default principal builder makes of it, so ACLs written for a Kafka broker
 * name the same principals here.
 */

/** A certificate subject as node:tls gives it (attribute to value, or values when repeated). */
export type CertificateSubject = Readonly<Record<string, string | readonly string[]>>;

function escapeValue(value: string): string {
  return value
    .replace(/([,+"\\<>;])/g, '\\$1')
    .replace(/^([ #])/, '\\$1')
    .replace(/ $/, '\\ ');
}

/** `User:<RFC 2253 subject>`, or undefined for a subject without attributes. */
export function certificatePrincipal(subject: CertificateSubject | undefined): string | undefined {
  if (subject === undefined) return undefined;
  const parts: string[] = [];
  for (const [attribute, value] of Object.entries(subject)) {
    for (const v of typeof value === 'string' ? [value] : value)
      parts.push(`${attribute}=${escapeValue(v)}`);
  }
  if (parts.length === 0) return undefined;
  return `User:${parts.reverse().join(',')}`;
}
