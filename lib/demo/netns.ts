/**
 * A simulated node: a "node" network namespace and one pod namespace per
 * overlay network, where every pod has the SAME IPv4 and IPv6 address. The
 * node reaches a network only through the routing table its socket mark
 * selects (`ip rule fwmark <id << shift>/<mask> lookup <table>`), the way a
 * Lace data plane does; its main table has no route to any pod. Everything
 * lives in namespaces created here; nothing touches the root namespace.
 */
import { run } from "../os/process.ts";
import { claimSuffix } from "./leftovers.ts";

export const POD_IPV4 = "10.244.1.10";
export const POD_IPV6 = "fd00:244::10";

/** The node's own addresses on its veth into network `id`: the source of its routes there. */
export function simNodeAddresses(id: number): { ipv4: string; ipv6: string } {
  return { ipv4: `10.99.${id}.1`, ipv6: `fd99::${id.toString(16)}` };
}

/** A veth link from `netns` (as `dev`) into `peerNetns`, where its end is eth0; both left down. */
export async function vethInto(netns: string, dev: string, peerNetns: string): Promise<void> {
  const peer = ["peer", "name", "eth0", "netns", peerNetns];
  await run(["ip", "-n", netns, "link", "add", dev, "type", "veth", ...peer]);
}

export interface SimNetwork {
  /** Network id, as in the mark. */
  id: number;
  /** Routing table of the node that leads into this network. */
  table: number;
  /** The pod's namespace and name. */
  podNetns: string;
  pod: string;
}

export interface SimNodeOptions {
  /** Network ids to create, 1..255 here. */
  networks: number[];
  markShift?: number;
}

export class SimNode implements AsyncDisposable {
  readonly netns: string;
  readonly networks: SimNetwork[] = [];
  readonly #created: string[] = [];

  private constructor(netns: string) {
    this.netns = netns;
  }

  /** Builds the node; on any failure removes what it made and rethrows. */
  static async create(opts: SimNodeOptions): Promise<SimNode> {
    const shift = opts.markShift ?? 16;
    const sfx = claimSuffix();
    const node = new SimNode(`lace-node-${sfx}`);
    try {
      await node.#addNetns(node.netns);
      for (const id of opts.networks) {
        if (!Number.isInteger(id) || id < 1 || id > 255) {
          throw new RangeError(`Sim network id must be 1..255: ${id}`);
        }
        const net: SimNetwork = {
          id,
          table: 100 + id,
          podNetns: `lace-pod${id}-${sfx}`,
          pod: `pod-net${id}`,
        };
        await node.#addNetns(net.podNetns);
        await node.#wire(net, shift);
        node.networks.push(net);
      }
      return node;
    } catch (e) {
      await node.dispose();
      throw e;
    }
  }

  async #addNetns(name: string): Promise<void> {
    await run(["ip", "netns", "add", name]);
    this.#created.push(name);
    const sysctl = (kv: string) => run(["ip", "netns", "exec", name, "sysctl", "-qw", kv]);
    await run(["ip", "-n", name, "link", "set", "lo", "up"]);
    // Replies arrive from pods the main table cannot route to: no reverse-path check.
    await sysctl("net.ipv4.conf.all.rp_filter=0");
    await sysctl("net.ipv4.conf.default.rp_filter=0");
    await sysctl("net.ipv6.conf.all.accept_dad=0");
    await sysctl("net.ipv6.conf.default.accept_dad=0");
  }

  async #wire(net: SimNetwork, shift: number): Promise<void> {
    const n = this.netns, p = net.podNetns, dev = `vn${net.id}`;
    const { ipv4: nodeV4, ipv6: nodeV6 } = simNodeAddresses(net.id);
    await vethInto(n, dev, p);
    await run(["ip", "-n", n, "addr", "add", `${nodeV4}/32`, "dev", dev]);
    await run(["ip", "-n", n, "addr", "add", `${nodeV6}/128`, "dev", dev, "nodad"]);
    await run(["ip", "-n", n, "link", "set", dev, "up"]);
    await run(["ip", "-n", p, "addr", "add", `${POD_IPV4}/24`, "dev", "eth0"]);
    await run(["ip", "-n", p, "addr", "add", `${POD_IPV6}/64`, "dev", "eth0", "nodad"]);
    await run(["ip", "-n", p, "link", "set", "eth0", "up"]);
    await run(["ip", "-n", p, "route", "add", "default", "dev", "eth0"]);
    await run(["ip", "-n", p, "-6", "route", "add", "default", "dev", "eth0"]);
    const table = String(net.table);
    await run([
      "ip",
      "-n",
      n,
      "route",
      "add",
      "10.244.1.0/24",
      "dev",
      dev,
      "src",
      nodeV4,
      "table",
      table,
    ]);
    await run([
      "ip",
      "-n",
      n,
      "-6",
      "route",
      "add",
      "fd00:244::/64",
      "dev",
      dev,
      "src",
      nodeV6,
      "table",
      table,
    ]);
    const mark = `0x${((net.id << shift) >>> 0).toString(16)}/0x${
      ((0xffff << shift) >>> 0).toString(16)
    }`;
    for (const fam of ["-4", "-6"]) {
      await run(["ip", "-n", n, fam, "rule", "add", "fwmark", mark, "lookup", table]);
    }
  }

  /** The network with this id. */
  network(id: number): SimNetwork {
    const net = this.networks.find((x) => x.id === id);
    if (!net) throw new RangeError(`No sim network ${id}`);
    return net;
  }

  /** Deletes every namespace made here (their veths go with them). Safe to call twice. */
  async dispose(): Promise<void> {
    while (this.#created.length) {
      const name = this.#created.pop()!;
      await run(["ip", "netns", "del", name]).catch(() => {});
    }
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.dispose();
  }
}
