/**
 * Conflicts between pods: the kubelet's connection carries only (family,
 * address, port), so one key can be routed into one network only. A probe
 * must reach its own pod's network or nothing, so by default a key claimed
 * by two networks is tagged for neither. Pure, and independent of input
 * order, so the agent never flaps between two pods.
 */
import { keyId, type ProbeKey } from "../probe/key.ts";
import { networkLabel } from "../probe/network_name.ts";
import { comparePodAge, type PodIdentity } from "./pod_fields.ts";
import type { PodNetwork } from "./pod_network.ts";
import type { PodPlacement } from "./placement.ts";
import type { Target } from "./targets.ts";

/**
 * What happens to a key claimed by pods of two or more networks (the default
 * network counts as one). `fail-closed`: no pod gets it. `older-wins`: the
 * oldest pod keeps it, for single-tenant clusters that accept that a newer
 * pod's probes may be answered by an older pod of another network.
 */
export type ConflictPolicy = "fail-closed" | "older-wins";
export const CONFLICT_POLICIES: readonly ConflictPolicy[] = ["fail-closed", "older-wins"];

/** One pod's claim on a key. */
export interface Claim {
  pod: PodIdentity;
  network: string;
  networkId: number;
}

/** Pods of different networks claim one key; `dropped` get no target for it. */
export interface Conflict {
  key: ProbeKey;
  policy: ConflictPolicy;
  /** older-wins: the claim that keeps the key; fail-closed: none. */
  kept?: Claim;
  /** One claim per pod that gets no target: under fail-closed every claimant. */
  dropped: Claim[];
}

function cmp(a: string | number, b: string | number): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Total order over targets that share a key: older pod first (creationTimestamp,
 * then uid), then fields that only differ in impossible cases (the same uid
 * twice), so the winner never depends on the order the pods arrived in.
 */
function compareClaims(a: Target, b: Target): number {
  return comparePodAge(a.pod, b.pod) ||
    cmp(a.networkId, b.networkId) || cmp(a.network, b.network) ||
    cmp(a.pod.namespace, b.pod.namespace) || cmp(a.pod.name, b.pod.name) ||
    cmp(a.container, b.container) || cmp(a.probe, b.probe) || cmp(a.handler, b.handler);
}

function claimOf(t: Target): Claim {
  return { pod: t.pod, network: t.network, networkId: t.networkId };
}

/** One claim per pod, in claim order. */
function perPod(group: Target[]): Claim[] {
  const seen = new Set<string>();
  const out: Claim[] = [];
  for (const t of group) {
    if (seen.has(t.pod.uid)) continue;
    seen.add(t.pod.uid);
    out.push(claimOf(t));
  }
  return out;
}

/**
 * Keeps at most one target per key across all pods. Pods of one network that
 * share a key (a pod recreated with the same IP, say) need one entry: the
 * oldest pod's target describes it, silently. Where pods of different
 * networks claim a key, `policy` decides: under fail-closed no target is kept
 * and every claimant is reported; under older-wins the oldest pod's target is
 * kept and the pods of other networks are reported. Default-network claims
 * (networkId 0) take part like any network; the caller writes no entry for
 * them. Output is sorted by key.
 */
export function resolveConflicts(
  targets: Target[],
  policy: ConflictPolicy,
): { targets: Target[]; conflicts: Conflict[] } {
  const byKey = new Map<string, Target[]>();
  for (const t of targets) {
    const id = keyId(t.key);
    const group = byKey.get(id);
    if (group) group.push(t);
    else byKey.set(id, [t]);
  }
  const kept: Target[] = [];
  const conflicts: Conflict[] = [];
  for (const id of [...byKey.keys()].sort()) {
    const group = byKey.get(id)!;
    if (group.length === 1) {
      kept.push(group[0]);
      continue;
    }
    group.sort(compareClaims);
    const winner = group[0];
    if (group.every((t) => t.networkId === winner.networkId)) {
      kept.push(winner);
    } else if (policy === "older-wins") {
      kept.push(winner);
      const dropped = perPod(group.filter((t) => t.networkId !== winner.networkId));
      conflicts.push({ key: winner.key, policy, kept: claimOf(winner), dropped });
    } else {
      conflicts.push({ key: winner.key, policy, dropped: perPod(group) });
    }
  }
  return { targets: kept, conflicts };
}

/** An address a new attachment brings that a pod of another network holds on this node. */
export interface AddressClash {
  address: string;
  holder: PodIdentity;
  holderNetwork: PodNetwork;
}

/**
 * The addresses of an attachment (a pod the node is attaching to `network`)
 * that live pods of other networks already hold on this node. Only what is
 * known counts: a holder whose network is unknown (malformed annotations) is
 * no clash, nor is the same pod (a new sandbox of it). Sorted by address.
 */
export function addressClashes(
  attachment: { uid: string; networkId: number; addresses: string[] },
  placements: PodPlacement[],
): AddressClash[] {
  const wanted = new Set(attachment.addresses);
  const clashes: AddressClash[] = [];
  for (const p of placements) {
    if (p.pod.uid === attachment.uid || !p.network) continue;
    if (p.network.networkId === attachment.networkId) continue;
    for (const a of p.addresses) {
      if (wanted.has(a.address)) {
        clashes.push({ address: a.address, holder: p.pod, holderNetwork: p.network });
      }
    }
  }
  return clashes.sort((a, b) => cmp(a.address, b.address) || cmp(a.holder.uid, b.holder.uid));
}

function where(key: ProbeKey): string {
  return key.family === "ipv6" ? `[${key.address}]:${key.port}` : `${key.address}:${key.port}`;
}

function networkName(claim: Claim): string {
  return claim.networkId === 0 ? "the default network" : networkLabel(claim.network);
}

/**
 * The Event message for a pod that gets no target for a conflicted key. It
 * names the address and port and the pod's own network, never another
 * tenant's pod, namespace or network: the Event is readable by this pod's
 * namespace.
 */
export function conflictMessage(c: Conflict, dropped: Claim): string {
  const what = `Probe target ${
    where(c.key)
  } is also claimed on this node by a pod of another network`;
  const effect = `the kubelet's probes of this pod to ${where(c.key)} are not tagged into ${
    networkName(dropped)
  }`;
  if (c.policy === "older-wins") {
    return `${what}, which is older and keeps it (--address-conflict=older-wins): ${effect}`;
  }
  return `${what}: Lace tags it for neither pod (fail closed), so ${effect} until the address is unique on the node`;
}

/**
 * The Event message for a pod whose CNI ADD was refused; names no other pod. `networkUnknown`:
 * the pod's own network was unknown at its ADD, so any other pod's address counted as another
 * network's.
 */
export function refusalMessage(clashes: AddressClash[], networkUnknown = false): string {
  const addresses = [...new Set(clashes.map((c) => c.address))].join(", ");
  const by = networkUnknown
    ? "by another pod, and this pod's network was unknown at its ADD (no network in its CNI conf, no valid network annotations known in time), so it may be another network"
    : "by a pod of another network";
  return `The CNI ADD of this pod was refused: address ${addresses} is already used on this node ${by}, and the kubelet's probes could be delivered into the wrong network; the runtime retries, and the network's address manager must pick an address unique on the node`;
}
