/**
 * The probe pods of the in-memory cluster, which are not stored: a pod is a
 * DaemonSet on a node, its name made from both, its addresses its node's
 * (shifted per network with distinctAddresses). MemoryPods answers which pod
 * a name or an address is, and which pod an address routes to from a
 * network, leaks included.
 */
import { NETWORK_LABEL } from "../../lib/netcheck/cluster/manifest.ts";
import type { FakeNode } from "./fake_nodes.ts";

/** A probe pod as an exec sees it: its DaemonSet, node and network (its name is made when needed). */
export interface FakePod {
  ds: string;
  node: FakeNode;
  /** Its DaemonSet's network label ("" without --networks). */
  network: string;
}

/** How pods of different networks see each other's addresses (MemoryClusterOptions). */
export interface PodAddressing {
  /**
   * Networks (their `lace.io/netcheck-network` label, "n0", "n1", …) whose pods
   * can reach another's: [from, to] lets pods of `from` reach addresses of `to`
   * that their own network does not hold.
   */
  leaks?: [string, string][];
  /** Network k > 0 gives its pods the node's addresses ending in 2+k (else all reuse them). */
  distinctAddresses?: boolean;
}

export class MemoryPods {
  /**
   * An exec finds its source and target node by the number in a fakeNodes()
   * name or address (other nodes through a map of them, made when first
   * needed) and makes no object per pod: an index of every pod, or pods made
   * per exec, would raise the bench's peak RSS at thousands of nodes
   * (bench/netcheck_worker.ts measures netcheck, not this stand-in).
   */
  #nodeByName: Map<string, FakeNode> | undefined;
  #nodeByAddress: Map<string, FakeNode> | undefined;
  /** Some address is held by two nodes (the earlier wins, so the map decides). */
  #duplicates = false;

  constructor(
    readonly nodes: FakeNode[],
    readonly daemonSets: Map<string, Record<string, unknown>>,
    readonly addressing: PodAddressing,
  ) {
    const seen = new Set<string>();
    for (const n of nodes) {
      for (const a of [n.ipv4, n.ipv6]) {
        if (a && seen.has(a)) this.#duplicates = true;
        else if (a) seen.add(a);
      }
    }
  }

  /** The name of DaemonSet `ds`'s pod on `node`. */
  podName(ds: string, node: FakeNode): string {
    return `${ds}-${node.name}`;
  }

  #index(): void {
    this.#nodeByName = new Map();
    this.#nodeByAddress = new Map();
    for (const node of this.nodes) {
      this.#nodeByName.set(node.name, node);
      // Earlier nodes win a duplicated address.
      for (const a of [node.ipv4, node.ipv6]) {
        if (a && !this.#nodeByAddress.has(a)) this.#nodeByAddress.set(a, node);
      }
    }
  }

  /** The network label of DaemonSet `ds` and how its pods' addresses are shifted (0: not). */
  #networkOf(manifest: Record<string, unknown>): { network: string; shift: number } {
    const labels = (manifest.metadata as { labels?: Record<string, string> }).labels ?? {};
    const network = labels[NETWORK_LABEL] ?? "";
    const k = Number(network.slice(1)) || 0;
    return { network, shift: this.addressing.distinctAddresses && k > 0 ? k : 0 };
  }

  /** The addresses of DaemonSet `manifest`'s pod on `node`. */
  addressesOf(manifest: Record<string, unknown>, node: FakeNode): string[] {
    const { shift } = this.#networkOf(manifest);
    return [node.ipv4, node.ipv6].filter((a): a is string => !!a)
      .map((a) => shift ? a.replace(/([.:])2$/, `$1${2 + shift}`) : a);
  }

  /** The pod named `name`, if its DaemonSet exists and its node is known. */
  pod(name: string): FakePod | undefined {
    for (const [ds, manifest] of this.daemonSets) {
      if (name.charCodeAt(ds.length) !== 45 || !name.startsWith(ds)) continue;
      const node = this.#nodeNamed(name, ds.length + 1);
      if (node) return { ds, node, network: this.#networkOf(manifest).network };
    }
    return undefined;
  }

  /** The node holding `address` (its own, not a pod's shifted one), if any. */
  nodeAt(address: string): FakeNode | undefined {
    // fakeNodes() numbers its nodes in their addresses: 10.<i/256>.<i%256>.2 and fd00::<i>:2.
    let i = -1;
    if (address.startsWith("10.") && address.endsWith(".2")) {
      const dot = address.indexOf(".", 3);
      i = Number(address.slice(3, dot)) * 256 + Number(address.slice(dot + 1, -2));
    } else if (address.startsWith("fd00::") && address.endsWith(":2")) {
      i = parseInt(address.slice(6, -2), 16);
    }
    const node = this.nodes[i];
    if (node && (node.ipv4 === address || node.ipv6 === address) && !this.#duplicates) return node;
    if (!this.#nodeByAddress) this.#index();
    return this.#nodeByAddress!.get(address);
  }

  /** The node named by `name` from `offset` on; fakeNodes() names are numbered. */
  #nodeNamed(name: string, offset: number): FakeNode | undefined {
    if (name.startsWith("node-", offset)) {
      const node = this.nodes[Number(name.slice(offset + 5))];
      if (node && node.name.length === name.length - offset && name.endsWith(node.name)) {
        return node;
      }
    }
    if (!this.#nodeByName) this.#index();
    return this.#nodeByName!.get(name.slice(offset));
  }

  /** The pod of a DaemonSet labelled `network` that holds `address`, if any. */
  #podAt(network: string, address: string): FakePod | undefined {
    for (const [ds, manifest] of this.daemonSets) {
      const { network: own, shift } = this.#networkOf(manifest);
      if (own !== network) continue;
      if (!shift) {
        const node = this.nodeAt(address);
        if (node) return { ds, node, network };
        continue;
      }
      // A shifted pod address ends in 2+k where its node's ends in 2 (others are kept as they are).
      for (const base of [address.replace(new RegExp(`([.:])${2 + shift}$`), "$12"), address]) {
        const node = this.nodeAt(base);
        if (node && this.addressesOf(manifest, node).includes(address)) {
          return { ds, node, network };
        }
      }
    }
    return undefined;
  }

  /** Who answers `address` for a pod of `network`: its own network's pod, else through a leak. */
  route(network: string, address: string): FakePod | undefined {
    const own = this.#podAt(network, address);
    if (own) return own;
    for (const [from, to] of this.addressing.leaks ?? []) {
      if (from !== network) continue;
      const leaked = this.#podAt(to, address);
      if (leaked) return leaked;
    }
    return undefined;
  }

  /** Whether the DaemonSet `manifest` in `namespace` matches "k=v,k=v". */
  selects(manifest: Record<string, unknown>, namespace: string, selector: string): boolean {
    const meta = manifest.metadata as { namespace?: string; labels?: Record<string, string> };
    if ((meta.namespace ?? namespace) !== namespace) return false;
    const labels = meta.labels ?? {};
    return selector.split(",").filter(Boolean).every((term) => {
      const eq = term.indexOf("=");
      return labels[term.slice(0, eq)] === term.slice(eq + 1);
    });
  }
}
