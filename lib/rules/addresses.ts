/**
 * Addresses that are never a pod's own: a probe target on one would make the
 * kubelet's connection to the node itself, to its link (the cloud metadata
 * service at 169.254.169.254), or to a group, carry a network's mark. Pure:
 * every source's addresses (API, pods directory, CNI) pass through here.
 */
import { type Family, parseAddress } from "../net/address.ts";

export type AddressKind = "loopback" | "link-local" | "unspecified" | "multicast" | "broadcast";

/**
 * What kind of non-unicast or node-local address this is, or undefined for an
 * ordinary unicast address. IPv4-mapped IPv6 (`::ffff:a.b.c.d`) is judged as
 * the IPv4 address it maps, the way the connect6 program looks it up. IPv4
 * 0.0.0.0/8 counts as unspecified: "this network" is never a destination
 * (RFC 1122), and a connect to 0.0.0.0 reaches the node itself.
 */
export function specialAddressKind(address: string): AddressKind | undefined {
  const { family, bytes } = parseAddress(address);
  return family === "ipv4" ? ipv4Kind(bytes) : ipv6Kind(bytes);
}

function ipv4Kind(b: Uint8Array): AddressKind | undefined {
  if (b[0] === 127) return "loopback";
  if (b[0] === 169 && b[1] === 254) return "link-local";
  if (b[0] === 0) return "unspecified";
  if (b[0] >= 224 && b[0] <= 239) return "multicast";
  if (b.every((x) => x === 255)) return "broadcast";
  return undefined;
}

function ipv6Kind(b: Uint8Array): AddressKind | undefined {
  const zeroHead = b.subarray(0, 15).every((x) => x === 0);
  if (zeroHead && b[15] === 1) return "loopback";
  if (zeroHead && b[15] === 0) return "unspecified";
  if (b[0] === 0xfe && (b[1] & 0xc0) === 0x80) return "link-local";
  if (b[0] === 0xff) return "multicast";
  return undefined;
}

/** Why an address kind never becomes a target, for the skip message. */
export function specialAddressReason(kind: AddressKind, family: Family): string {
  switch (kind) {
    case "loopback":
      return "a loopback address is the node itself";
    case "link-local":
      return family === "ipv4"
        ? "a link-local address (169.254.0.0/16, incl. the metadata service) belongs to the node's link"
        : "a link-local address (fe80::/10) belongs to the node's link";
    case "unspecified":
      return "an unspecified address reaches the node itself";
    case "multicast":
      return "a multicast address names a group, not a pod";
    case "broadcast":
      return "the broadcast address names every host on the link, not a pod";
  }
}
