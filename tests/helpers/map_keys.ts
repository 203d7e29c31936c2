/** The probe keys the map-read tests hold steady: IPv4 and IPv6 alternately, all distinct. */
import { canonicalAddress } from "../../lib/net/address.ts";
import type { ProbeKey } from "../../lib/probe/key.ts";

export function stableKey(i: number): ProbeKey {
  if (i % 2 === 0) {
    return {
      family: "ipv4",
      address: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`,
      port: 80,
    };
  }
  const text = `fd00::${(i >> 16).toString(16)}:${(i & 0xffff).toString(16)}`;
  return { family: "ipv6", address: canonicalAddress(text).address, port: 443 };
}
