/**
 * Address family selection: each pod's address of the chosen family comes
 * from status.podIPs (dual-stack pods list both), never the primary podIP.
 */
import type { IpFamily } from "../options.ts";

/** The family of a textual IP address. */
function familyOf(address: string): IpFamily {
  return address.includes(":") ? "ipv6" : "ipv4";
}

/** The first of `podIPs` in `family`, or undefined. */
export function addressOfFamily(podIPs: readonly string[], family: IpFamily): string | undefined {
  return podIPs.find((ip) => familyOf(ip) === family);
}
