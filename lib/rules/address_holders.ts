/**
 * Who holds an address on this node when pods of several networks have it.
 * The kubelet reaches a pod by address and port only, and follows a redirect
 * to the same address on any port; so where two networks share an address, a
 * pod of one can answer the kubelet with a redirect to the other's probe port,
 * and the kubelet's next connect is tagged into the other network (policy
 * skipped). Under the default policy an address belongs to one network at a
 * time: the older pod's. Pure, and independent of input order.
 */
import type { Family } from "../net/address.ts";
import { comparePodAge, type PodIdentity } from "./pod_fields.ts";
import { type PodNetwork, UNKNOWN_NETWORK } from "./pod_network.ts";
import type { PodPlacement } from "./placement.ts";

/** A pod at a shared address, with its network. */
export interface PodAt {
  pod: PodIdentity;
  network: PodNetwork;
  /** The agent cannot read the pod's probes (PodPlacement.probesUnknown). */
  probesUnknown?: true;
}

/** An address that live pods of two or more networks (the default network counts) hold on this node. */
export interface SharedAddress {
  family: Family;
  address: string;
  /** The oldest pod at the address (creationTimestamp, then uid): its network holds it. */
  holder: PodAt;
  /** Pods of the holder's network besides the holder (a pod recreated with its address). */
  peers: PodAt[];
  /** Pods of other networks, oldest first: under `exclusive` none of their probes there is tagged. */
  later: PodAt[];
  /**
   * Under `exclusive`, the holder and its peers lose their targets at the
   * address too when a pod on the default network is among the later pods:
   * the kubelet reaches that pod without any mark, so it could answer with a
   * redirect to the holder's probe ports; likewise a later pod whose network
   * is unknown (UNKNOWN_NETWORK), and one whose probes the agent cannot read
   * (refused as too large): any port the kubelet probes it on may be one of
   * the holder's. Fail closed: never into a network.
   */
  holderWithdrawn: boolean;
}

/**
 * The addresses that pods of two or more networks hold, sorted by address,
 * each with its holder (the oldest pod) and the later pods of other networks.
 * A pod whose network nothing tells comes as UNKNOWN_NETWORK (the agent places
 * it so: desired_state.ts addressPlacement) and holds its addresses against
 * every network (older wins, as for any pod); a placement without a network
 * takes no part.
 */
export function sharedAddresses(placements: PodPlacement[]): SharedAddress[] {
  // One pass that only notes, per address, its first network and whether another follows: at
  // ~10k pods a reconcile must not build and sort an entry per address (most have one pod).
  const byAddress = new Map<string, { family: Family; networkId: number; multi: boolean }>();
  for (const p of placements) {
    if (!p.network) continue;
    for (const a of p.addresses) {
      const entry = byAddress.get(a.address);
      if (!entry) {
        byAddress.set(a.address, {
          family: a.family,
          networkId: p.network.networkId,
          multi: false,
        });
      } else if (entry.networkId !== p.network.networkId) entry.multi = true;
    }
  }
  const pods = new Map<string, PodAt[]>();
  for (const [address, entry] of byAddress) if (entry.multi) pods.set(address, []);
  if (pods.size === 0) return [];
  for (const p of placements) {
    if (!p.network) continue;
    // One pod lists an address once (podAddresses drops duplicates).
    for (const a of p.addresses) {
      const at: PodAt = p.probesUnknown
        ? { pod: p.pod, network: p.network, probesUnknown: true }
        : { pod: p.pod, network: p.network };
      pods.get(a.address)?.push(at);
    }
  }
  const out: SharedAddress[] = [];
  for (const address of [...pods.keys()].sort()) {
    const at = pods.get(address)!;
    at.sort((a, b) => comparePodAge(a.pod, b.pod) || a.network.networkId - b.network.networkId);
    const [holder, ...rest] = at;
    const id = holder.network.networkId;
    const later = rest.filter((p) => p.network.networkId !== id);
    out.push({
      family: byAddress.get(address)!.family,
      address,
      holder,
      peers: rest.filter((p) => p.network.networkId === id),
      later,
      holderWithdrawn: id !== 0 && later.some((p) => reachedUnmarked(p.network) || p.probesUnknown),
    });
  }
  return out;
}

/**
 * Whether the kubelet may reach a pod of `network` without a mark: one on the default network,
 * or one whose network is unknown (UNKNOWN_NETWORK: it may be on the default network).
 */
function reachedUnmarked(network: PodNetwork): boolean {
  return network.networkId === 0 || network.networkId === UNKNOWN_NETWORK.networkId;
}

/** The key of one pod's address in untaggedAt(). */
export function podAddressKey(uid: string, address: string): string {
  return `${uid}|${address}`;
}

/**
 * Under `exclusive`: the (pod uid, address) pairs whose targets get no map
 * entry (podAddressKey). Their probes still count as claims in the per-key
 * conflicts: the kubelet connects to them, so a key the later pod also probes
 * must not stay tagged into the holder's network for the later pod's probes.
 */
export function untaggedAt(shared: SharedAddress[]): Set<string> {
  const out = new Set<string>();
  for (const s of shared) {
    const losers = s.holderWithdrawn ? [s.holder, ...s.peers, ...s.later] : s.later;
    for (const p of losers) out.add(podAddressKey(p.pod.uid, s.address));
  }
  return out;
}

/**
 * The Event message for a pod that loses its targets at a shared address
 * under `exclusive`. It names the address and this pod's own network, never
 * another tenant's pod, namespace or network (the Event is readable by this
 * pod's namespace).
 */
export function addressClashMessage(s: SharedAddress, pod: PodAt): string {
  const own = pod.network.networkId === 0
    ? "the default network"
    : pod.network.networkId === UNKNOWN_NETWORK.networkId
    ? "any network"
    : `network "${pod.network.network}"`;
  const later = s.later.some((p) => p.pod.uid === pod.pod.uid);
  const why = later
    ? `Address ${s.address} of this pod is already held on this node by an older pod of another network`
    : `Address ${s.address} of this pod is also held on this node by a later pod that the kubelet reaches without a network mark or whose probes Lace cannot read, so the kubelet's probes of that pod could land at this pod's ports`;
  return `${why} (--address-sharing=exclusive): none of the kubelet's probes of this pod at ${s.address} is tagged into ${own}, so they may fail, until the address is unique on the node; the network's address manager must give each pod an address no other network uses on the node`;
}
