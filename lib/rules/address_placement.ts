/**
 * Where a pod sits for the one-network-per-address rule (network, addresses), and the memo of
 * what was derived from each merged pod object: the one place the reconcile (desired_state.ts)
 * and the refusals at attach (agent/admission/clashes.ts) both place pods from.
 */
import type { Pod } from "../pods/pod.ts";
import type { PodCache } from "../pods/cache.ts";
import type { PodTargets } from "./targets.ts";
import { type PodNetwork, type TargetOptions, UNKNOWN_NETWORK } from "./pod_network.ts";
import { type PodPlacement, podPlacement } from "./placement.ts";
import { podAddresses } from "./pod_fields.ts";
import type { DesiredTarget } from "./desired_target.ts";

/**
 * What was derived from one merged pod object, for the node network it was computed for: the
 * rules' result and its views (made on first use, one per target of `result.targets`, in its
 * order) for the reconcile, and where the pod sits (network, addresses) for both the
 * reconcile's address holders and the refusals at attach (agent/admission/clashes.ts). The cache
 * hands back the same object until the pod changes, so each is computed once per pod change,
 * by whichever asks first, and a pod that does not change keeps its views and entries from one
 * reconcile to the next.
 */
export interface PodDerived {
  node: PodNetwork | undefined;
  result?: PodTargets;
  views?: DesiredTarget[];
  /** null: the pod sits nowhere (hostNetwork, finished, no spec). */
  placement?: PodPlacement | null;
}

/** The derivations per merged pod object, kept by the agent core across reconciles and ADDs. */
export type RulesMemo = WeakMap<Pod, PodDerived>;

/** The memo's entry for `pod`, a fresh one when the pod's node network changed. */
export function derivedFor(memo: RulesMemo, pod: Pod, node: PodNetwork | undefined): PodDerived {
  let derived = memo.get(pod);
  if (!derived || derived.node !== node) {
    derived = { node };
    memo.set(pod, derived);
  }
  return derived;
}

/**
 * Where `pod` sits in the node network `node` (podPlacement()), computed once per pod object
 * and network; undefined for a pod that sits nowhere.
 */
export function placementOf(
  memo: RulesMemo,
  pod: Pod,
  config: TargetOptions,
  node: PodNetwork | undefined,
): PodPlacement | undefined {
  const derived = derivedFor(memo, pod, node);
  if (derived.placement === undefined) derived.placement = podPlacement(pod, config, node) ?? null;
  return derived.placement ?? undefined;
}

/**
 * Where pod `uid` sits for the one-network-per-address rule: the one rule the reconcile's
 * address holders (desiredState) and the refusals at attach (agent/admission/clashes.ts) both place
 * pods by. A pod whose network nothing tells holds its addresses as UNKNOWN_NETWORK, against
 * every network (fail closed), and its probes count as unknown (it has no targets or claims):
 * its annotations malformed and no attach network from the node, known from the CNI path alone
 * whose conf named none (`networkUnknown`), or refused by the cache (too large, nested too
 * deeply) with neither. Otherwise a tenant could leave its pod's network unknown to share
 * another network's address, and the kubelet's probes of its pod, on a port the other pod
 * probes, would be tagged into that network. A refused pod is placed from its views as they
 * are (PodCache.holderView), and always has its probes unknown. Undefined for a pod that holds
 * no address (on the host network, finished, gone); throws only when nothing of a refused pod
 * is readable. `probesKnown` false: the caller could not evaluate the pod's probes (its rules
 * threw), which counts like a refusal. The memo keeps podPlacement's result, which is the pod's
 * own; an unknown one is a new object each call.
 */
export function addressPlacement(
  input: AddressPlacementInput,
  uid: string,
  probesKnown = true,
): PodPlacement | undefined {
  const { pods, memo, config, node } = input;
  let placed: PodPlacement | undefined;
  let evaluable = probesKnown;
  try {
    const pod = pods.get(uid);
    placed = pod && placementOf(memo, pod, config, node);
  } catch {
    evaluable = false;
    const pod = pods.holderView(uid);
    placed = pod && placementOf(memo, pod, config, node);
  }
  if (!placed) return undefined;
  placed = withAttachedAddresses(placed, input.attachedAddresses?.(uid));
  const learnt = input.learntNetwork?.(uid);
  if (learnt) placed = { ...placed, network: learnt };
  const unknown = !placed.network || input.networkUnknown?.(uid) === true;
  if (!unknown && evaluable) return placed;
  return { ...placed, network: unknown ? UNKNOWN_NETWORK : placed.network, probesUnknown: true };
}

/**
 * `placed` holding also the addresses the CNI path attached the pod's current sandbox with
 * (`attached`), where its views name others: the API's status.podIPs, which outrank them in the
 * merged view, still name the old sandbox's address until the kubelet reports the new one, while
 * the kubelet already probes the pod at the new one (its own status follows the sandbox). Held only
 * at the old address, the new one would look free: another network's ADD there would be accepted,
 * and the kubelet's probes of this pod there tagged into that network. Special addresses are left
 * out as everywhere (podAddresses). The same object when nothing is added.
 */
function withAttachedAddresses(
  placed: PodPlacement,
  attached: readonly string[] | undefined,
): PodPlacement {
  if (!attached?.length) return placed;
  // The common case, at every reconcile for every attached pod: the views name the same ones.
  if (attached.every((ip) => placed.addresses.some((a) => a.address === ip))) return placed;
  const have = new Set(placed.addresses.map((a) => a.address));
  const extra = podAddresses({ podIPs: attached.map((ip) => ({ ip })) }).addresses.filter((a) =>
    !have.has(a.address)
  );
  return extra.length ? { ...placed, addresses: [...placed.addresses, ...extra] } : placed;
}

/** What addressPlacement() reads: the pods, the memo, and the network the node attached the pod to. */
export interface AddressPlacementInput {
  pods: Pick<PodCache, "get" | "holderView">;
  memo: RulesMemo;
  config: TargetOptions;
  /** The network the node attached the pod to, if it did (authoritative over annotations). */
  node: PodNetwork | undefined;
  /** Whether nothing can tell this pod's network yet (DesiredStateInput.networkUnknown). */
  networkUnknown?: (uid: string) => boolean;
  /**
   * The network the pod's CNI ADD learnt from its trusted annotations while the CNI path alone
   * knows it (CniAttachments.learntNetwork): it places the pod instead of UNKNOWN_NETWORK.
   */
  learntNetwork?: (uid: string) => PodNetwork | undefined;
  /**
   * The addresses the CNI path attached the pod's current sandbox with (CniAttachments
   * .interfaceAddresses): held too, also where the pod's views still name older ones.
   */
  attachedAddresses?: (uid: string) => readonly string[];
}
