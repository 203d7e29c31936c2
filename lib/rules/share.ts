/**
 * Sharing the probe map fairly between pods. The map has a fixed capacity;
 * one pod that wants more than its share must not starve the others. Pure:
 * counts in, counts out.
 */
import { keyId, type ProbeKey } from "../probe/key.ts";
import type { PodIdentity } from "./pod_fields.ts";
import type { Target } from "./targets.ts";

/**
 * How many targets each pod may write when together they want more than
 * `capacity`: max-min fair shares ("water filling"). Every pod that wants no
 * more than the common share gets all it wants; the pods that want more get
 * the share, and what is left over goes one entry each to those pods in uid
 * order, so the result never depends on input order. When everything fits,
 * every pod gets what it wants. Returns the allowance per uid.
 */
export function fairShares(wanted: Map<string, number>, capacity: number): Map<string, number> {
  const allowed = new Map(wanted);
  let total = 0;
  for (const n of wanted.values()) total += n;
  if (total <= capacity) return allowed;
  // Pods by what they want, ascending: each one that fits under the even split of what is
  // left is served in full, and the rest share evenly.
  const uids = [...wanted.keys()].sort((a, b) => wanted.get(a)! - wanted.get(b)! || cmp(a, b));
  let left = Math.max(0, capacity);
  let i = 0;
  for (; i < uids.length; i++) {
    const even = Math.floor(left / (uids.length - i));
    const n = wanted.get(uids[i])!;
    if (n > even) break;
    left -= n;
  }
  const rest = uids.slice(i).sort(cmp);
  const share = Math.floor(left / Math.max(1, rest.length));
  let extra = left - share * rest.length;
  for (const uid of rest) {
    allowed.set(uid, share + (extra > 0 ? 1 : 0));
    if (extra > 0) extra--;
  }
  return allowed;
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Why some of a pod's targets are not in the map. */
export type UnwrittenReason = "cap" | "map-full" | "write-error";

/** Some of a pod's targets are not in the map; the pod's probes to them are not tagged. */
export interface Unwritten {
  pod: PodIdentity;
  reason: UnwrittenReason;
  /** Targets not written. */
  count: number;
  /** Targets the pod has in all. */
  wanted: number;
  /** What an operator and the pod's author should know, naming no other pod. */
  message: string;
}

/**
 * Splits a pod's targets at the per-pod cap: the first `cap` in the rules'
 * order (spec order: the first containers' probes) may be written; the rest
 * stay claims only, so they still take part in conflicts, and are reported.
 */
export function capTargets(
  targets: Target[],
  cap: number,
): { writable: Target[]; over: Target[]; unwritten?: Unwritten } {
  if (targets.length <= cap) return { writable: targets, over: [] };
  const over = targets.slice(cap);
  return {
    writable: targets.slice(0, cap),
    over,
    unwritten: {
      pod: targets[0].pod,
      reason: "cap",
      count: over.length,
      wanted: targets.length,
      message:
        `This pod has ${targets.length} probe targets and at most ${cap} per pod are written to the probe map (--max-targets-per-pod): the kubelet's probes to the other ${over.length} are not tagged into its network`,
    },
  };
}

/**
 * Keeps the winners within the map's capacity by fair shares between pods
 * (`fairShares`); each pod keeps its first targets by `rank` (its rules'
 * order). A pod that loses some is reported as "map-full". The kept targets
 * stay in the winners' order.
 */
export function shareMap(
  winners: Target[],
  rank: (t: Target) => number,
  capacity: number,
): { kept: Target[]; unwritten: Unwritten[] } {
  if (winners.length <= capacity) return { kept: winners, unwritten: [] };
  const byPod = new Map<string, Target[]>();
  for (const t of winners) {
    const list = byPod.get(t.pod.uid);
    if (list) list.push(t);
    else byPod.set(t.pod.uid, [t]);
  }
  const wanted = new Map([...byPod].map(([uid, list]) => [uid, list.length]));
  const allowed = fairShares(wanted, capacity);
  const trimmed = new Set<Target>();
  const unwritten: Unwritten[] = [];
  for (const [uid, list] of byPod) {
    const n = allowed.get(uid)!;
    if (n >= list.length) continue;
    for (const t of [...list].sort((a, b) => rank(a) - rank(b)).slice(n)) trimmed.add(t);
    unwritten.push({
      pod: list[0].pod,
      reason: "map-full",
      count: list.length - n,
      wanted: list.length,
      message:
        `The probe map (${capacity} entries) cannot hold every pod's targets: this pod gets a fair share of ${n} of its ${list.length}, and the kubelet's probes to the other ${
          list.length - n
        } are not tagged into its network`,
    });
  }
  const kept = trimmed.size ? winners.filter((t) => !trimmed.has(t)) : winners;
  return { kept, unwritten };
}

/**
 * The pods whose puts failed, one entry per pod and reason: "map-full" when
 * the kernel said the map is full (E2BIG, ENOSPC: entries this agent does not
 * own, such as a previous agent's before the first full list, hold the rest),
 * "write-error" otherwise. `targets` are every desired target with its pod.
 */
export function failedWrites(
  failed: { key: ProbeKey; code?: string; error?: string }[],
  targets: { key: ProbeKey; pod: PodIdentity }[],
): Unwritten[] {
  if (failed.length === 0) return [];
  const byKey = new Map(targets.map((t) => [keyId(t.key), t]));
  const wanted = new Map<string, number>();
  for (const t of targets) wanted.set(t.pod.uid, (wanted.get(t.pod.uid) ?? 0) + 1);
  const byPod = new Map<string, Unwritten>();
  for (const op of failed) {
    const t = byKey.get(keyId(op.key));
    if (!t) continue;
    const reason = op.code === "E2BIG" || op.code === "ENOSPC" ? "map-full" : "write-error";
    const known = byPod.get(`${t.pod.uid}|${reason}`);
    if (known) {
      known.count++;
      continue;
    }
    byPod.set(`${t.pod.uid}|${reason}`, {
      pod: t.pod,
      reason,
      count: 1,
      wanted: wanted.get(t.pod.uid)!,
      message: reason === "map-full"
        ? "The probe map is full: some of this pod's probe targets could not be written, and the kubelet's probes to them are not tagged into its network"
        : `Some of this pod's probe targets could not be written to the probe map (${op.error}): the kubelet's probes to them are not tagged into its network; the agent retries`,
    });
  }
  return [...byPod.values()];
}
