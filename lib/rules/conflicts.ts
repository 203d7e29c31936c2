/**
 * Conflicts between pods: the kubelet's connection carries only (family,
 * address, port), so one key can be routed into one network only. Pure, and
 * independent of input order, so the agent never flaps between two pods.
 */
import { keyId, type ProbeKey } from "../datapath/probe_map.ts";
import type { PodIdentity, Target } from "./targets.ts";

/** Two pods in different networks want the same key: `kept` wins, `dropped` gets no target. */
export interface Conflict {
  key: ProbeKey;
  kept: { pod: PodIdentity; network: string; networkId: number };
  dropped: { pod: PodIdentity; network: string; networkId: number };
}

function time(pod: PodIdentity): number {
  const t = pod.creationTimestamp === undefined ? NaN : Date.parse(pod.creationTimestamp);
  // A pod without a readable creation time cannot claim to be older than anyone.
  return Number.isNaN(t) ? Infinity : t;
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
  return cmp(time(a.pod), time(b.pod)) || cmp(a.pod.uid, b.pod.uid) ||
    cmp(a.networkId, b.networkId) || cmp(a.network, b.network) ||
    cmp(a.pod.namespace, b.pod.namespace) || cmp(a.pod.name, b.pod.name) ||
    cmp(a.container, b.container) || cmp(a.probe, b.probe) || cmp(a.handler, b.handler);
}

/**
 * Keeps one target per key across all pods. Where pods in different networks
 * claim the same key, the older pod's target stays and each other pod's is
 * dropped and reported as a conflict. Where they share the network (a pod
 * recreated with the same IP, say) the same rule picks one silently: the map
 * entry is the same either way. Output is sorted by key.
 */
export function resolveConflicts(targets: Target[]): { targets: Target[]; conflicts: Conflict[] } {
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
    const group = byKey.get(id)!.sort(compareClaims);
    const winner = group[0];
    kept.push(winner);
    const reported = new Set<string>([winner.pod.uid]);
    for (const other of group.slice(1)) {
      if (other.networkId === winner.networkId || reported.has(other.pod.uid)) continue;
      reported.add(other.pod.uid);
      conflicts.push({
        key: winner.key,
        kept: { pod: winner.pod, network: winner.network, networkId: winner.networkId },
        dropped: { pod: other.pod, network: other.network, networkId: other.networkId },
      });
    }
  }
  return { targets: kept, conflicts };
}
