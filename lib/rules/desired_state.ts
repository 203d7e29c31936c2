/**
 * What the probe map should hold, derived from the pods the cache knows:
 * the rules per pod, the per-pod cap, who holds each address that pods of
 * several networks share, conflicts between pods, then the fair share of a
 * full map. Pure: no I/O and no clock; AgentCore runs it on every
 * reconcile and keeps the result as its snapshot.
 */
import { markFor, type MarkLayout } from "../probe/key.ts";
import { type Conflict, type ConflictPolicy, resolveConflicts } from "./conflicts.ts";
import { PodRefusedError } from "../pods/pod.ts";
import type { PodCache } from "../pods/cache.ts";
import { keyId, type ProbeEntry, type ProbeKey, type ProbeValue } from "../probe/key.ts";
import { probeTargetsForPod, type Target } from "./targets.ts";
import type { Skip, SkipReason } from "./skip.ts";
import type { NetworkMismatch, PodNetwork, TargetOptions } from "./pod_network.ts";
import { capTargets, shareMap, type Unwritten } from "./share.ts";
import type { PodPlacement } from "./placement.ts";
import { addressPlacement, derivedFor, type RulesMemo } from "./address_placement.ts";
import { type AddressSharing, addressSharingPolicy } from "./address_sharing.ts";
import {
  podAddressKey,
  type SharedAddress,
  sharedAddresses,
  untaggedAt,
} from "./address_holders.ts";
import { errorText } from "../text/error.ts";
import type { PodIdentity } from "./pod_fields.ts";
import type { PodRangeSet } from "../net/cidr.ts";
import type { DesiredTarget } from "./desired_target.ts";

/** The settings the computation reads (the agent's Config has them). */
export interface DesiredStateConfig extends TargetOptions, MarkLayout {
  addressConflict: ConflictPolicy;
  addressSharing: AddressSharing;
  maxTargetsPerPod: number;
}

export interface DesiredStateInput {
  /** The pods to evaluate, by uid, as the cache lists them. */
  uids: string[];
  pods: Pick<PodCache, "get" | "identity" | "holderView">;
  /** The network the node attached each pod to, by uid (authoritative over annotations). */
  nodeNetworks: ReadonlyMap<string, PodNetwork>;
  config: DesiredStateConfig;
  /** How many entries the map holds. */
  capacity: number;
  /** Kept across calls so the rules run once per pod change. */
  memo: RulesMemo;
  /**
   * Whether nothing can tell this pod's network yet: the CNI path reported it
   * without one and no other source knows it. Such a pod holds its addresses
   * against every network (UNKNOWN_NETWORK; it is not on the default network
   * merely because its only view has no annotations).
   */
  networkUnknown?: (uid: string) => boolean;
  /** The network a pod's ADD learnt (AddressPlacementInput.learntNetwork). */
  learntNetwork?: (uid: string) => PodNetwork | undefined;
  /** The addresses of each pod's current sandbox (AddressPlacementInput.attachedAddresses). */
  attachedAddresses?: (uid: string) => readonly string[];
  /**
   * The node's own addresses (host/addresses.ts): no pod gets a target at one, under both
   * sharing modes, as the kubelet probes the node's host-network pods there.
   */
  hostAddresses?: ReadonlySet<string>;
  /**
   * The operator's pod ranges (--pod-cidrs): when there are any, a pod address outside all of
   * them is no pod's (a control plane's, a registry's, another host's the kubelet's cgroup talks
   * to) and gets no target, under both sharing modes. None: every address may be a pod's.
   */
  podRanges?: PodRangeSet;
}

/**
 * Why a pod address the host holds is refused: the node's own, or the API server's
 * (agent/host/api_server_addresses.ts). The pod's Event; names no other pod.
 */
export const HOST_ADDRESS_REFUSAL =
  "is one of this node's own addresses or the Kubernetes API server's: the kubelet connects there itself (to probe the node's host-network pods, to reach its API server) and cannot tell those connections from this pod's probes, so the pod gets no probe targets there and an attachment bringing it is refused; give the pod's networks address ranges that exclude the node's own addresses and the API server's";

/**
 * Why a pod gets no target at an address outside the pod ranges, after "Pod IP <address>" (also
 * the pod's Event; names no other pod).
 */
export const OUTSIDE_POD_RANGES_REFUSAL =
  "is outside every pod range of this node (--pod-cidrs): it may be an address the kubelet itself talks to (the API server, a registry), whose connections would be tagged into this pod's network, so no probe there is tagged; give the pod an address from the network's pod range";

/** A pod at one of the node's own addresses: it gets no targets there. */
export interface HostHeldAddress {
  pod: PodIdentity;
  address: string;
}

export interface DesiredState {
  /** The map's desired entries by key id. */
  desired: Map<string, ProbeEntry>;
  views: DesiredTarget[];
  conflicts: Conflict[];
  skips: Skip[];
  mismatches: NetworkMismatch[];
  /** Targets over a pod's cap or beyond its fair share of a full map. */
  unwritten: Unwritten[];
  /** Conflicted keys nobody keeps: they leave the map even before the first full list. */
  withdraw: ProbeKey[];
  /**
   * Addresses live pods of two or more networks hold. Under `exclusive` the
   * later pods (and, where one of them is on the default network, the holder)
   * got no entry at them; under `shared` they are only counted.
   */
  sharedAddresses: SharedAddress[];
  /** Pods at the node's own addresses, which the host holds (no targets there). */
  hostHeld: HostHeldAddress[];
  /** Pods at addresses outside the operator's pod ranges (no targets there). */
  outsidePodRanges: HostHeldAddress[];
}

/**
 * Computes the map's desired entries from the pods: each pod's targets (in
 * the network the node attached it to, when known), capped per pod, then
 * under `exclusive` no entry for a pod at an address an older pod of another
 * network holds (its targets there stay claims), then conflicts resolved
 * across pods, then the survivors shared fairly when the map cannot hold
 * them all. A pod that cannot be evaluated costs only its own
 * targets and is reported as a skip.
 */
export function desiredState(input: DesiredStateInput): DesiredState {
  const { uids, pods, nodeNetworks, config, memo } = input;
  // Targets, and claims that take part in conflicts but get no entry: those of
  // default-network pods and those over a pod's cap.
  const all: Target[] = [];
  const claimsOnly = new Set<Target>();
  const rank = new Map<Target, number>();
  const viewOf = new Map<Target, DesiredTarget>();
  const skips: Skip[] = [];
  const mismatches: NetworkMismatch[] = [];
  const unwritten: Unwritten[] = [];
  const placements: PodPlacement[] = [];
  for (const uid of uids) {
    let evaluated = false;
    // Each pod on its own: whatever one pod's objects make throw (a manifest nested
    // thousands of levels deep, a shape nobody foresaw) costs that pod its targets only.
    try {
      const pod = pods.get(uid)!;
      const node = nodeNetworks.get(uid);
      // The rules run once per pod change rather than once per pod per reconcile.
      const derived = derivedFor(memo, pod, node);
      derived.result ??= probeTargetsForPod(pod, config, node);
      const result = derived.result;
      const { writable, over, unwritten: capped } = capTargets(
        result.targets,
        config.maxTargetsPerPod,
      );
      derived.views ??= targetViews(result.targets, config);
      const views = derived.views;
      writable.forEach((t, i) => {
        rank.set(t, i);
        // capTargets writes a prefix of the rules' targets, so views[i] is t's (tested: a capped
        // pod's views name its written targets).
        viewOf.set(t, views[i]);
      });
      for (const t of [...over, ...(result.claims ?? [])]) claimsOnly.add(t);
      all.push(...writable, ...over, ...(result.claims ?? []));
      if (capped) unwritten.push(capped);
      skips.push(...result.skipped);
      if (result.mismatch) mismatches.push(result.mismatch);
      evaluated = true;
    } catch (error) {
      skips.push(unusable(pods, uid, error));
    }
    // Every live pod at an address counts, with probes or without, also one that cannot be
    // evaluated (its addresses stay held) or whose network nothing tells.
    try {
      const placed = addressPlacement({ ...input, node: nodeNetworks.get(uid) }, uid, evaluated);
      if (placed) placements.push(placed);
    } catch { /* nothing of it is readable: the skip above reports it */ }
  }
  const shared = sharedAddresses(placements);
  const displaced: ProbeKey[] = [];
  // Addresses that are no pod's, under both sharing modes: the node's own (the kubelet probes
  // the node's host-network pods there) and, with pod ranges, any outside them (the kubelet's
  // own connections may go there). Targets there stay claims; each pod there is told why.
  // `of`: the placements concerned (default: every one).
  const notPods = (
    isNot: (address: string) => boolean,
    reason: SkipReason,
    why: string,
    of: (p: PodPlacement) => boolean = () => true,
  ) => {
    const held = placements.filter(of).flatMap((p) =>
      p.addresses.filter((a) => isNot(a.address)).map((a) => ({ pod: p.pod, address: a.address }))
    );
    if (held.length === 0) return held;
    for (const t of all) {
      if (!isNot(t.key.address)) continue;
      if (!claimsOnly.has(t)) displaced.push(t.key);
      claimsOnly.add(t);
    }
    for (const h of held) skips.push({ pod: h.pod, reason, message: `Pod IP ${h.address} ${why}` });
    return held;
  };
  const host = input.hostAddresses;
  const hostHeld = host?.size
    ? notPods((a) => host.has(a), "host-address", HOST_ADDRESS_REFUSAL)
    : [];
  // Only pods of a Lace network can have targets: the default network's ranges are not Lace's.
  const ranges = input.podRanges;
  const outside = ranges?.ranges.length
    ? notPods(
      (a) => !ranges.has(a),
      "outside-pod-ranges",
      OUTSIDE_POD_RANGES_REFUSAL,
      (p) => (p.network?.networkId ?? 0) > 0,
    )
    : [];
  if (addressSharingPolicy(config.addressSharing).untagsLaterPods && shared.length > 0) {
    const untagged = untaggedAt(shared);
    for (const t of all) {
      if (!untagged.has(podAddressKey(t.pod.uid, t.key.address))) continue;
      if (!claimsOnly.has(t)) displaced.push(t.key);
      claimsOnly.add(t);
    }
  }
  const { targets: winners, conflicts } = resolveConflicts(all, config.addressConflict);
  const { kept, unwritten: overflow } = shareMap(
    winners.filter((t) => !claimsOnly.has(t)),
    (t) => rank.get(t) ?? 0,
    input.capacity,
  );
  unwritten.push(...overflow);
  const desired = new Map<string, ProbeEntry>();
  const views: DesiredTarget[] = [];
  for (const t of kept) {
    const view = viewOf.get(t)!;
    desired.set(keyId(t.key), view.entry);
    views.push(view);
  }
  // A conflicted key nobody keeps, or a displaced pod's, leaves the map even before the first
  // full list: an entry a previous agent wrote for it would deliver probes into another network.
  const withdrawn = new Map<string, ProbeKey>();
  for (const k of [...conflicts.map((c) => c.key), ...displaced]) {
    if (!desired.has(keyId(k))) withdrawn.set(keyId(k), k);
  }
  const withdraw = [...withdrawn.values()];
  return {
    desired,
    views,
    conflicts,
    skips,
    mismatches,
    unwritten,
    withdraw,
    sharedAddresses: shared,
    hostHeld,
    outsidePodRanges: outside,
  };
}

/**
 * One pod's targets as views with their map entries. Targets of one network
 * share one value; each view is one object literal of a fixed shape (no
 * properties added later), as the snapshot holds one per target at a full map.
 */
export function targetViews(targets: Target[], config: DesiredStateConfig): DesiredTarget[] {
  const values = new Map<number, ProbeValue>();
  return targets.map((t) => {
    let value = values.get(t.networkId);
    if (!value) {
      value = Object.freeze({ networkId: t.networkId, mark: markFor(config, t.networkId) });
      values.set(t.networkId, value);
    }
    const entry: ProbeEntry = { key: t.key, value };
    const { network, pod, container, probe, handler, http, periodSeconds } = t;
    if (http) {
      return periodSeconds === undefined
        ? { entry, network, pod, container, probe, handler, http }
        : { entry, network, pod, container, probe, handler, periodSeconds, http };
    }
    return periodSeconds === undefined
      ? { entry, network, pod, container, probe, handler }
      : { entry, network, pod, container, probe, handler, periodSeconds };
  });
}

/** The skip for a pod whose views could not be merged or evaluated. */
function unusable(pods: Pick<PodCache, "identity">, uid: string, error: unknown): Skip {
  const reason = errorText(error);
  return {
    pod: pods.identity(uid) ?? { namespace: "", name: "", uid },
    reason: error instanceof PodRefusedError ? error.reason : "malformed",
    message: `The pod could not be evaluated and gets no probe targets: ${reason}`,
  };
}
