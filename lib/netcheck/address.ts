/**
 * Address family selection: each pod's address of the chosen family comes
 * from status.podIPs (dual-stack pods list both), never the primary podIP.
 */
import type { IpFamily } from "./options.ts";

/** The family of a textual IP address. */
export function familyOf(address: string): IpFamily {
  return address.includes(":") ? "ipv6" : "ipv4";
}

/** The first of `podIPs` in `family`, or undefined. */
export function addressOfFamily(podIPs: readonly string[], family: IpFamily): string | undefined {
  return podIPs.find((ip) => familyOf(ip) === family);
}

/** `host:port`, with IPv6 addresses in brackets. */
export function hostPort(address: string, port: number): string {
  return familyOf(address) === "ipv6" ? `[${address}]:${port}` : `${address}:${port}`;
}
