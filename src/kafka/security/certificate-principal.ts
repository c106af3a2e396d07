/**
 * The principal of a TLS client that presented a verified certificate: `User:` and the certificate's
 * subject as RFC 2253 writes a distinguished name (most specific first: `CN=alice,OU=eng,O=acme`;
 * a multi-valued RDN joined by `+`), exactly as Kafka's default principal builder makes it
 * (Java's X500Principal.getName()), so ACLs written for a Kafka broker name the same principals here.
 *
 * It is built from the subject's DER (in the certificate's bytes), as Java builds it:
 * - the RDNs in reverse order of the certificate, the values of a multi-valued RDN in theirs;
 * - an attribute is named by Java's RFC 2253 keyword (CN, C, L, ST, O, OU, STREET, DC, UID) or else
 *   by its dotted OID (emailAddress, serialNumber, title...);
 * - a keyword attribute whose value is one of Java's strings (UTF8String, PrintableString,
 *   IA5String, T61String, GeneralString, BMPString) is `KEYWORD=value`: the value's bytes decoded as
 *   UTF-8 whatever the string type (as Java does, so a BMPString reads as NULs and letters), escaped
 *   as Java escapes it: `\` before any of `,=+<>#;"\`, `\00` for NUL, `\` before each leading or
 *   trailing space or CR, other characters as they are;
 * - any other attribute, and a keyword attribute whose value is of another type, is
 *   `<name>=#<DER of the value, lowercase hex>`
 *   (`1.2.840.113549.1.9.1=#1611616c696365406578616d706c652e636f6d` for emailAddress=alice@example.com,
 *   `CN=#1203313233` for a CN held in a NumericString);
 * - an empty subject is `User:` with an empty name, as Kafka makes it.
 * Not from node:tls's subject object, which groups a repeated attribute's values into one array and
 * flattens a multi-valued RDN (`CN=alice+OU=eng,O=acme` and `CN=alice,OU=eng,O=acme` would read the
 * same), nor from OpenSSL's printed subject, which names and escapes attributes otherwise.
 */
import type { X509Certificate } from 'node:crypto';

/** Java's RFC 2253 keywords, by OID; every other attribute is written as its OID. */
const RFC2253_KEYWORDS: ReadonlyMap<string, string> = new Map([
  ['2.5.4.3', 'CN'],
  ['2.5.4.6', 'C'],
  ['2.5.4.7', 'L'],
  ['2.5.4.8', 'ST'],
  ['2.5.4.9', 'STREET'],
  ['2.5.4.10', 'O'],
  ['2.5.4.11', 'OU'],
  ['0.9.2342.19200300.100.1.1', 'UID'],
  ['0.9.2342.19200300.100.1.25', 'DC'],
]);

const TAG = {
  OID: 0x06,
  SEQUENCE: 0x30,
  SET: 0x31,
  VERSION: 0xa0,
  UTF8: 0x0c,
  PRINTABLE: 0x13,
  T61: 0x14,
  IA5: 0x16,
  GENERAL: 0x1b,
  BMP: 0x1e,
} as const;

/**
 * One element: its tag, where it starts, where its content starts and ends, and where it ends (past
 * the end-of-contents octets of one of indefinite length).
 */
interface Element {
  readonly tag: number;
  readonly start: number;
  readonly content: number;
  readonly contentEnd: number;
  readonly end: number;
}

/** Bit of a tag that marks a constructed element (one made of elements). */
const CONSTRUCTED = 0x20;
/** Deepest nesting of indefinite lengths read (a Name needs 3); deeper is refused, never recursed. */
const INDEFINITE_DEPTH_MAX = 8;

/** Thrown on bytes that are not the DER expected; caught by certificatePrincipal. */
class MalformedDer extends Error {}

/**
 * The element at `at`, within `limit`. Besides DER, it reads BER's indefinite length (0x80, the
 * content ended by two zero octets) of a constructed element, which OpenSSL accepts in a
 * certificate's Name and Java reads.
 */
function elementAt(der: Uint8Array, at: number, limit: number, depth = 0): Element {
  if (at + 2 > limit || depth > INDEFINITE_DEPTH_MAX) throw new MalformedDer();
  const tag = der[at]!;
  if ((tag & 0x1f) === 0x1f) throw new MalformedDer(); // a multi-byte tag: none in a Name
  let length = der[at + 1]!;
  let content = at + 2;
  if (length === 0x80) {
    if ((tag & CONSTRUCTED) === 0) throw new MalformedDer();
    let next = content;
    for (;;) {
      if (next + 2 > limit) throw new MalformedDer();
      if (der[next] === 0 && der[next + 1] === 0) break;
      next = elementAt(der, next, limit, depth + 1).end;
    }
    return { tag, start: at, content, contentEnd: next, end: next + 2 };
  }
  if (length & 0x80) {
    const bytes = length & 0x7f;
    if (bytes === 0 || bytes > 4 || content + bytes > limit) throw new MalformedDer();
    length = 0;
    for (let i = 0; i < bytes; i++) length = length * 256 + der[content + i]!;
    content += bytes;
  }
  const end = content + length;
  if (end > limit) throw new MalformedDer();
  return { tag, start: at, content, contentEnd: end, end };
}

function children(der: Uint8Array, parent: Element): Element[] {
  const found: Element[] = [];
  for (let at = parent.content; at < parent.contentEnd; at = found[found.length - 1]!.end)
    found.push(elementAt(der, at, parent.contentEnd));
  return found;
}

/** `element`, when it is there with `tag`. */
function ofTag(element: Element | undefined, tag: number): Element {
  if (element === undefined || element.tag !== tag) throw new MalformedDer();
  return element;
}

function oidText(der: Uint8Array, oid: Element): string {
  // Arcs as BigInts: an arc may be past 2^53, where two OIDs would print as one number.
  const arcs: bigint[] = [];
  let value = 0n;
  for (let at = oid.content; at < oid.end; at++) {
    value = value * 128n + BigInt(der[at]! & 0x7f);
    if ((der[at]! & 0x80) === 0) {
      if (arcs.length > 0) arcs.push(value);
      else if (value < 80n) arcs.push(value / 40n, value % 40n);
      else arcs.push(2n, value - 80n);
      value = 0n;
    }
  }
  if (arcs.length === 0) throw new MalformedDer();
  return arcs.join('.');
}

/** Java's string types of an attribute value (AVA.isDerString). */
const STRING_TAGS: ReadonlySet<number> = new Set([
  TAG.UTF8,
  TAG.PRINTABLE,
  TAG.T61,
  TAG.IA5,
  TAG.GENERAL,
  TAG.BMP,
]);

/**
 * A string value's text as Java reads it: its bytes decoded as UTF-8 whatever the string type,
 * malformed sequences as U+FFFD; undefined for a value that is not one of its strings.
 */
function stringValue(bytes: Buffer, tag: number): string | undefined {
  return STRING_TAGS.has(tag) ? bytes.toString('utf8') : undefined;
}

/** Java's escaping of a string value in RFC 2253 (AVA.toRFC2253String). */
function escaped(value: string): string {
  const chars = value.replace(/[,=+<>#;"\\]/g, '\\$&').replace(/\0/g, '\\00');
  const blanks = (text: string) => text.replace(/[ \r]/g, '\\$&');
  const lead = chars.length - chars.replace(/^[ \r]+/, '').length;
  if (lead === chars.length) return blanks(chars);
  const trail = chars.replace(/[ \r]+$/, '').length;
  return blanks(chars.slice(0, lead)) + chars.slice(lead, trail) + blanks(chars.slice(trail));
}

function attributeText(der: Buffer, attribute: Element): string {
  const [type, value, ...rest] = children(der, ofTag(attribute, TAG.SEQUENCE));
  if (value === undefined || rest.length > 0) throw new MalformedDer();
  const oid = oidText(der, ofTag(type, TAG.OID));
  const keyword = RFC2253_KEYWORDS.get(oid);
  const text =
    keyword === undefined
      ? undefined
      : stringValue(der.subarray(value.content, value.contentEnd), value.tag);
  if (text === undefined)
    return `${keyword ?? oid}=#${der.subarray(value.start, value.end).toString('hex')}`;
  return `${keyword}=${escaped(text)}`;
}

/** The subject Name of a certificate's DER. */
function subjectOf(der: Buffer): Element {
  const certificate = ofTag(elementAt(der, 0, der.length), TAG.SEQUENCE);
  const tbs = ofTag(children(der, certificate)[0], TAG.SEQUENCE);
  const fields = children(der, tbs);
  // version [0] (optional), serialNumber, signature, issuer, validity, subject
  const first = fields[0]?.tag === TAG.VERSION ? 1 : 0;
  return ofTag(fields[first + 4], TAG.SEQUENCE);
}

/**
 * `User:<RFC 2253 subject>` of a certificate, as Java writes it (`User:` for an empty subject);
 * undefined for none, and for bytes that are not a certificate.
 */
export function certificatePrincipal(
  certificate: Pick<X509Certificate, 'raw'> | undefined,
): string | undefined {
  if (certificate === undefined) return undefined;
  const der = certificate.raw;
  try {
    const rdns = children(der, subjectOf(der)).map((rdn) =>
      children(der, ofTag(rdn, TAG.SET))
        .map((attribute) => attributeText(der, attribute))
        .join('+'),
    );
    return `User:${rdns.reverse().join(',')}`;
  } catch (error) {
    if (error instanceof MalformedDer) return undefined;
    throw error;
  }
}
