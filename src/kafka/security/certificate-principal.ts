/**
 * The principal of a TLS client that presented a verified certificate: `User:` and the certificate's
 * subject as RFC 2253 writes a distinguished name (most specific first: `CN=alice,OU=eng,O=acme`;
 * a multi-valued RDN joined by `+`), which is what Kafka's default principal builder makes of it
 * (X500Principal.getName()), so ACLs written for a Kafka broker name the same principals here.
 *
 * It is built from the certificate's subject as OpenSSL prints it (`X509Certificate.subject`):
 * one RDN a line in the certificate's order, the values of a multi-valued RDN joined by ` + `,
 * every value escaped as RFC 2253 escapes it (`,+"\<>;`, a leading `#` or space, a trailing space)
 * and control characters as `\XX`, so neither a line break nor ` + ` can come from a value. Not
 * from node:tls's subject object, which groups a repeated attribute's values into one array and
 * flattens a multi-valued RDN: there `CN=alice+OU=eng,O=acme` and `CN=alice,OU=eng,O=acme`, or
 * `CN=x,OU=b,OU=a` and `OU=b,CN=x,OU=a`, read the same, and two subjects would be one principal.
 */

/** `User:<RFC 2253 subject>` of a subject as `X509Certificate.subject` prints it; undefined for none. */
export function certificatePrincipal(subject: string | undefined): string | undefined {
  if (subject === undefined) return undefined;
  const rdns = subject
    .split('\n')
    .filter((line) => line.length > 0)
    .map((line) => line.split(' + ').join('+'));
  if (rdns.length === 0) return undefined;
  return `User:${rdns.reverse().join(',')}`;
}
