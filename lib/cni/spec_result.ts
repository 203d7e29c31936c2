/**
 * The result the plugin hands back: the pod's own addresses read from the previous plugin's
 * result, and that result passed through in the configuration's version. Pure.
 */
import { isObject, jsonText } from "../text/json.ts";
import { CniError, compareVersions, ERR } from "./spec.ts";

/**
 * The pod's own addresses in a prevResult: every `ips[].address` (CIDR) whose
 * interface, when named, is inside the sandbox. Host-side interfaces (a veth's
 * host end) carry no `sandbox` and are left out. Throws code 7 on a malformed
 * result, because a plugin that cannot read its input must not guess.
 */
export function resultAddresses(result: Record<string, unknown>): string[] {
  const ips = result.ips ?? [];
  const interfaces = Array.isArray(result.interfaces) ? result.interfaces : [];
  if (!Array.isArray(ips)) throw new CniError(ERR.invalidConfig, `"prevResult.ips" is not a list`);
  const out: string[] = [];
  for (const ip of ips) {
    if (!isObject(ip) || typeof ip.address !== "string") {
      throw new CniError(
        ERR.invalidConfig,
        `"prevResult.ips" holds an entry without an address: ${jsonText(ip)}`,
      );
    }
    if (typeof ip.interface === "number") {
      const iface = interfaces[ip.interface];
      if (isObject(iface) && !iface.sandbox) continue;
    }
    const address = ip.address.split("/")[0];
    if (!/^[0-9a-fA-F:.]+$/.test(address)) {
      throw new CniError(
        ERR.invalidConfig,
        `"prevResult.ips" holds an address that is not an IP address: "${ip.address}"`,
      );
    }
    if (!out.includes(address)) out.push(address);
  }
  return out;
}

/**
 * Returns the result to print for ADD: prevResult unchanged when it already is
 * in the configuration's version (the normal case: the runtime converts it
 * before chaining), else converted. Between 0.3.0 and 1.1.0 the only change is
 * `ips[].version`, present before 1.0.0 and removed in it.
 */
export function passThrough(
  prevResult: Record<string, unknown>,
  cniVersion: string,
): Record<string, unknown> {
  const from = typeof prevResult.cniVersion === "string" ? prevResult.cniVersion : cniVersion;
  if (from === cniVersion) {
    return prevResult.cniVersion === undefined ? { cniVersion, ...prevResult } : prevResult;
  }
  const out: Record<string, unknown> = { ...prevResult, cniVersion };
  if (Array.isArray(prevResult.ips)) {
    const modern = compareVersions(cniVersion, "1.0.0") >= 0;
    out.ips = prevResult.ips.map((ip) => {
      if (!isObject(ip)) return ip;
      const { version: _drop, ...rest } = ip;
      if (modern) return rest;
      const address = typeof ip.address === "string" ? ip.address : "";
      return { ...rest, version: address.includes(":") ? "6" : "4" };
    });
  }
  return out;
}
