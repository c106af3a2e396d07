/**
 * Client addresses in one form, so that an ACL's host and the per-address limits see one client as
 * one address: a listener bound to `::` reports an IPv4 client as `::ffff:a.b.c.d`, which an ACL
 * naming `a.b.c.d` (or an operator counting connections per address) must still match.
 *
 * - An IPv4-mapped IPv6 address becomes its IPv4 address.
 * - Any other IPv6 address takes its canonical text (RFC 5952: lower case, the longest run of zero
 *   groups compressed), so `0:0:0:0:0:0:0:1` and `::1` are one host.
 * - An IPv4 address stays as it is.
 *
 * Limits counted per client (connections, authentications in progress, failed logins) count per
 * `addressGroup`: an IPv4 address, or an IPv6 address's /64 network. One IPv6 host is usually given
 * a whole /64 and may use any address of it, so counting per IPv6 address would let one host
 * multiply its share by opening each connection from another address.
 */
import * as net from 'node:net';

const MAPPED_PREFIX = '::ffff:';
const MAPPED_HEX = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/;

/** The canonical form of an IP address (see the module header); undefined for anything else. */
export function canonicalAddress(text: string): string | undefined {
  if (net.isIPv4(text)) return text;
  if (!net.isIPv6(text)) return undefined;
  const lower = text.toLowerCase();
  if (lower.startsWith(MAPPED_PREFIX) && net.isIPv4(lower.slice(MAPPED_PREFIX.length)))
    return lower.slice(MAPPED_PREFIX.length);
  // The URL parser serializes an IPv6 host in its canonical form (and maps an IPv4-mapped one to
  // hexadecimal groups, handled above).
  const zone = lower.indexOf('%');
  if (zone >= 0) return lower;
  const canonical = new URL(`http://[${lower}]/`).hostname.slice(1, -1);
  // IPv4-mapped: exactly ::ffff: and two groups (the URL parser writes a.b.c.d as two groups).
  const mapped = MAPPED_HEX.exec(canonical);
  if (mapped !== null) {
    const high = parseInt(mapped[1]!, 16);
    const low = parseInt(mapped[2]!, 16);
    return `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
  }
  return canonical;
}

/** A connected socket's client address in canonical form (`unknown` when the socket has none). */
export function clientAddress(socket: net.Socket): string {
  const address = socket.remoteAddress;
  if (address === undefined) return 'unknown';
  return canonicalAddress(address) ?? address;
}

/** The group a canonical address counts in for per-client limits: itself (IPv4), or its IPv6 /64. */
export function addressGroup(address: string): string {
  if (!address.includes(':')) return address;
  const zone = address.indexOf('%');
  const bare = zone >= 0 ? address.slice(0, zone) : address;
  const [head = '', tail] = bare.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = [
    ...left,
    ...Array<string>(Math.max(0, 8 - left.length - right.length)).fill('0'),
    ...right,
  ];
  return `${groups.slice(0, 4).join(':')}::/64`;
}
