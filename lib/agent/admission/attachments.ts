/**
 * What the CNI path told the agent about the node's pods: the network the node
 * attached each pod to (authoritative over the pod's annotations, which the
 * pod's author can write), kept in the node network store when there is one,
 * and the addresses of each interface it attached, published into the pod
 * cache as the "cni" source's view of the pod.
 */
import type { Attachment, AttachmentRef } from "../../cni/protocol.ts";
import type { Pod } from "../../pods/pod.ts";
import type { PodCache } from "../../pods/cache.ts";
import type { PodNetwork } from "../../rules/pod_network.ts";
import type { NodeNetworkStore } from "./node_networks.ts";
import { PodInterfaces } from "./pod_interfaces.ts";

/**
 * The pod's primary interface: containerd and CRI-O attach the pod network on eth0, and Multus
 * its cluster network there (its further attachments get net1, net2 or the name the pod asks).
 */
export const PRIMARY_IFNAME = "eth0";

/** The pod view the CNI path maintains, ranked below the API and the directory. */
export const CNI_SOURCE = "cni";

/** The CNI path's networks and interface addresses per pod; see the module comment. */
export class CniAttachments {
  /** The network the node attached each pod to, by uid. */
  readonly nodeNetworks = new Map<string, PodNetwork>();
  /**
   * The network an ADD whose conf named none read from the pod's trusted annotations (the API's
   * answer for that uid, or the cache's view from the API or the pods directory), by uid: what
   * places the pod while the CNI path alone knows it (learntNetwork). Not the node's network,
   * so never over the annotations, and not kept across a restart.
   */
  readonly #learnt = new Map<string, PodNetwork>();
  /** The addresses of each interface the CNI path attached (Multus: several per pod). */
  readonly #interfaces = new PodInterfaces();
  readonly #cache: PodCache;
  readonly #store?: NodeNetworkStore;

  constructor(cache: PodCache, store?: NodeNetworkStore) {
    this.#cache = cache;
    this.#store = store;
    for (const [uid, net] of store?.load() ?? []) this.nodeNetworks.set(uid, net);
  }

  /**
   * Records the interface `ref` of the pod, with its network when the attachment names one, else
   * the network its ADD `learnt` (attachmentNetwork(): the trusted annotations it checked, never
   * anything the pod's own ADD input says).
   */
  add(a: Attachment, ref?: AttachmentRef, learnt?: PodNetwork): void {
    if (a.networkId === undefined && learnt && (!ref || ref.ifname === PRIMARY_IFNAME)) {
      this.#learnt.set(a.uid, learnt);
    }
    if (a.network !== undefined && a.networkId !== undefined) {
      const known = this.nodeNetworks.get(a.uid);
      if (known?.network !== a.network || known.networkId !== a.networkId) {
        this.nodeNetworks.set(a.uid, { network: a.network, networkId: a.networkId });
        this.#store?.save(this.nodeNetworks);
      }
    }
    this.#upsertCniView(a, this.#interfaces.add(a.uid, ref, a.ips));
  }

  /**
   * Why `a` may not name its network, or undefined. The pod's network is its primary
   * interface's (PRIMARY_IFNAME: the interface the runtime attaches the pod network on, whose
   * addresses are the status.podIPs the kubelet probes). Another interface (Multus attaching
   * what the pod's own `k8s.v1.cni.cncf.io/networks` annotation asks for) may name only that
   * network: taking its network for the pod would tag the kubelet's probes of the primary
   * address into a network whose own pods may hold that address. Refused too when the
   * primary's network is not the node's (its attachment named none, or Lace was not chained
   * there): nothing says the two are one network.
   */
  refusedNetwork(a: Attachment, ref?: AttachmentRef): string | undefined {
    if (a.network === undefined || a.networkId === undefined) return undefined;
    if (!ref || ref.ifname === PRIMARY_IFNAME) return undefined;
    const known = this.nodeNetworks.get(a.uid);
    if (known?.network === a.network && known.networkId === a.networkId) return undefined;
    return known
      ? `the node attached the pod's ${PRIMARY_IFNAME} to network ${JSON.stringify(known.network)}`
      : `the node named no network for the pod's ${PRIMARY_IFNAME}`;
  }

  /**
   * Forgets one interface of a pod (`ref`), or the whole pod (no `ref`, or its
   * last interface). True when only an interface went and the pod stays.
   */
  remove(uid: string, ref?: AttachmentRef): boolean {
    const left = this.#interfaces.remove(uid, ref);
    // Only who the pod is: a pod refused as too large has that too (get would throw).
    const view = left && this.#cache.holderView(uid);
    if (left && view) {
      this.#upsertCniView({ ...view.metadata, uid }, left);
      return true;
    }
    this.#interfaces.remove(uid, undefined);
    this.#learnt.delete(uid);
    if (this.nodeNetworks.delete(uid)) this.#store?.save(this.nodeNetworks);
    this.#cache.remove(CNI_SOURCE, uid);
    return false;
  }

  /** Every address the CNI path attached the pod's interfaces with. */
  interfaceAddresses(uid: string): readonly string[] {
    return this.#interfaces.addresses(uid);
  }

  /**
   * Known from the CNI path only, which named no network, and its ADD learnt none either: its
   * network is unknown, not default.
   */
  readonly networkUnknown = (uid: string): boolean =>
    !this.nodeNetworks.has(uid) && !this.#learnt.has(uid) && this.#cniOnly(uid);

  /**
   * The network the pod's ADD learnt, while the CNI path alone knows the pod and the node named
   * none: without it the pod would count as of unknown network until the watch delivers it, and
   * a same-network pod holding its address would lose its targets meanwhile.
   */
  readonly learntNetwork = (uid: string): PodNetwork | undefined =>
    this.nodeNetworks.has(uid) || !this.#cniOnly(uid) ? undefined : this.#learnt.get(uid);

  #cniOnly(uid: string): boolean {
    return this.#cache.sourcesOf(uid).every((s) => s === CNI_SOURCE);
  }

  /**
   * Forgets the node's network of pods no source knows any more (deleted while
   * the agent was away, or without a CNI DEL); call once every source has listed.
   */
  forgetGonePods(uids: string[]): void {
    const known = new Set(uids);
    this.#interfaces.keepOnly(known);
    for (const uid of [...this.#learnt.keys()]) if (!known.has(uid)) this.#learnt.delete(uid);
    if (this.nodeNetworks.size === 0) return;
    let changed = false;
    for (const uid of [...this.nodeNetworks.keys()]) {
      if (!known.has(uid)) changed = this.nodeNetworks.delete(uid) || changed;
    }
    if (changed) this.#store?.save(this.nodeNetworks);
  }

  /** The pod as the CNI path knows it: its identity and addresses, no spec. */
  #upsertCniView(p: { namespace: string; name: string; uid: string }, ips: string[]): void {
    const pod: Pod = {
      metadata: { namespace: p.namespace, name: p.name, uid: p.uid },
      spec: { containers: [] },
      status: { podIPs: ips.map((ip) => ({ ip })) },
    };
    this.#cache.upsert(CNI_SOURCE, pod);
  }
}
