/**
 * A pod's own fields read tolerantly: who it is and which addresses it holds.
 * A pod comes from a source its author controls, so a field of the wrong type
 * or shape is read as absent (or set aside with what was wrong), never an
 * exception.
 */
import type { Pod } from "../pods/pod.ts";
import { canonicalAddress, type Family } from "../net/address.ts";
import type { ProbeKey } from "../probe/key.ts";
import { specialAddressKind, specialAddressReason } from "./addresses.ts";
import { isObject } from "../text/json.ts";

/** Who a target or a problem belongs to: enough to log it and to address an Event. */
export interface PodIdentity {
  namespace: string;
  name: string;
  uid: string;
  creationTimestamp?: string;
}

/** A loosely typed view of a pod's fields, which are checked as they are read. */
// deno-lint-ignore no-explicit-any
export type Loose = any;

/** A pod's creation time in ms; one without a readable time cannot claim to be older than anyone. */
function createdMs(pod: PodIdentity): number {
  const t = pod.creationTimestamp === undefined ? NaN : Date.parse(pod.creationTimestamp);
  return Number.isNaN(t) ? Infinity : t;
}

/**
 * Older pod first: creationTimestamp (set by the API server, which tenants cannot
 * choose), then uid. The same for every agent and across restarts, so a choice
 * made by it never depends on the order the pods arrived in.
 */
export function comparePodAge(a: PodIdentity, b: PodIdentity): number {
  const ta = createdMs(a), tb = createdMs(b);
  if (ta !== tb) return ta < tb ? -1 : 1;
  return a.uid < b.uid ? -1 : a.uid > b.uid ? 1 : 0;
}

/** The value when it is a string, else undefined. */
export function str(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

/** The pod's identity; tolerant of missing fields so a skip can always name the pod. */
export function podIdentity(pod: Pod): PodIdentity {
  const meta: Loose = isObject<Loose>(pod) && isObject<Loose>(pod.metadata) ? pod.metadata : {};
  const id: PodIdentity = {
    namespace: str(meta.namespace) ?? "default",
    name: str(meta.name) ?? "",
    uid: str(meta.uid) ?? "",
  };
  const created = str(meta.creationTimestamp);
  if (created !== undefined) id.creationTimestamp = created;
  return id;
}

/**
 * The pod's addresses, canonical and without duplicates; podIP only when podIPs
 * is absent or empty. Loopback, link-local, unspecified, multicast and
 * broadcast addresses are set aside in `special` with the reason: none of them
 * is a pod's own address, whatever a source says.
 */
export function podAddresses(
  status: Loose,
): { addresses: ProbeKey[]; bad: string[]; special: string[] } {
  const raw: unknown[] = [];
  if (isObject<Loose>(status)) {
    if (Array.isArray(status.podIPs) && status.podIPs.length > 0) {
      for (const item of status.podIPs) raw.push(isObject<Loose>(item) ? item.ip : item);
    } else if (status.podIP !== undefined && status.podIP !== "") {
      raw.push(status.podIP);
    }
  }
  const addresses: ProbeKey[] = [];
  const bad: string[] = [];
  const special: string[] = [];
  const seen = new Set<string>();
  for (const ip of raw) {
    let canonical: { family: Family; address: string };
    try {
      if (typeof ip !== "string") throw new TypeError("not a string");
      canonical = canonicalAddress(ip);
    } catch {
      bad.push(JSON.stringify(ip) ?? String(ip));
      continue;
    }
    const { family, address } = canonical;
    if (seen.has(address)) continue;
    seen.add(address);
    const kind = specialAddressKind(address);
    if (kind) {
      special.push(
        `Pod IP ${JSON.stringify(ip)} never becomes a probe target: ${
          specialAddressReason(kind, family)
        }`,
      );
      continue;
    }
    addresses.push({ family, address, port: 0 });
  }
  return { addresses, bad, special };
}
