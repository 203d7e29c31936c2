/**
 * The real node's network namespace: loopback for the control plane, an uplink veth pair whose
 * both ends are inside (the kubelet needs a default route to find its node IP; nothing leaves),
 * per pod network a bridge plus a routing table that only the mark contract selects, and an
 * unreachable route for the pod ranges in the node's own table.
 */
import { run } from "../../lib/os/process.ts";
import type { CleanupStack } from "../../lib/os/cleanup_stack.ts";
import type { NetworkSetting } from "./node_config.ts";

/** The three isolated pod networks; every one allocates from the same ranges. */
export const NETWORKS: NetworkSetting[] = [
  { name: "red", id: 1, bridge: "lnet1" },
  { name: "green", id: 2, bridge: "lnet2" },
  { name: "blue", id: 3, bridge: "lnet3" },
];
export const POD_SUBNET4 = "10.244.1.0/24";
export const POD_SUBNET6 = "fd00:244::/64";
export const NODE_IP = "10.200.0.1";
const UPLINK_PEER = "10.200.0.2";
const PROBE_FLAG = 0x1000;
const MARK_SHIFT = 16;

/** The node's IPv4 address on a network's bridge: the source of its routes into that network. */
export function bridgeAddress4(network: NetworkSetting): string {
  return `10.99.${network.id}.1`;
}

/** The node's IPv6 address on a network's bridge. */
export function bridgeAddress6(network: NetworkSetting): string {
  return `fd99::${network.id}`;
}

/** A node's pod address ranges, the same in each of its networks. */
export interface PodSubnets {
  v4: string;
  v6: string;
}

/**
 * Creates the network namespace `netns` with loopback, the uplink and every network's node side
 * (bridge, routing table, mark rule) for the pod ranges `subnets`; its deletion goes on
 * `cleanup` first.
 */
export async function createNodeNetwork(
  netns: string,
  cleanup: CleanupStack,
  subnets: PodSubnets = { v4: POD_SUBNET4, v6: POD_SUBNET6 },
): Promise<void> {
  await run(["ip", "netns", "add", netns]);
  cleanup.push(() => run(["ip", "netns", "del", netns]));
  const ipn = (...args: string[]) => run(["ip", "-n", netns, ...args]);
  const sysctl = (kv: string) =>
    run(["nsenter", `--net=/run/netns/${netns}`, "--", "sysctl", "-qw", kv]);
  await ipn("link", "set", "lo", "up");
  for (
    const kv of [
      "net.ipv4.conf.all.rp_filter=0",
      "net.ipv4.conf.default.rp_filter=0",
      "net.ipv6.conf.all.accept_dad=0",
      "net.ipv6.conf.default.accept_dad=0",
    ]
  ) await sysctl(kv);
  await ipn("link", "add", "uplink0", "type", "veth", "peer", "name", "uplink1");
  await ipn("addr", "add", `${NODE_IP}/24`, "dev", "uplink0");
  await ipn("addr", "add", `${UPLINK_PEER}/24`, "dev", "uplink1");
  await ipn("addr", "add", "fd00:200::1/64", "dev", "uplink0", "nodad");
  await ipn("link", "set", "uplink0", "up");
  await ipn("link", "set", "uplink1", "up");
  await ipn("route", "add", "default", "via", UPLINK_PEER, "dev", "uplink0");
  // The node's own routing leads into no pod network: a connection Lace did not tag (a process
  // outside the kubelet, a port that is no target) fails at once with "no route to host"
  // instead of hanging until TCP gives up, as a lifecycle hook, which has no timeout, would.
  // A high metric, so a route a test adds (node_link.ts) takes precedence.
  await ipn("route", "add", "unreachable", subnets.v4, "metric", "4000");
  await ipn("-6", "route", "add", "unreachable", subnets.v6, "metric", "4000");
  for (const network of NETWORKS) await addNetworkNodeSide(ipn, network, subnets);
}

/**
 * Makes one pod network's node side with `ip` (run in the node's network namespace): its bridge
 * with the node's addresses of this network, its routing table holding the pod ranges `subnets`
 * and the rules that select that table for the network's mark only. The node's main table has no
 * route to pod addresses, so nothing reaches a pod without the mark. Used for the fixed networks
 * here and by the network plugin for a namespace's network made on its first pod.
 */
export async function addNetworkNodeSide(
  ip: (...args: string[]) => Promise<unknown>,
  network: NetworkSetting,
  subnets: PodSubnets,
): Promise<void> {
  const table = String(100 + network.id);
  const nodeV4 = bridgeAddress4(network), nodeV6 = bridgeAddress6(network);
  await ip("link", "add", network.bridge, "type", "bridge");
  await ip("addr", "add", `${nodeV4}/32`, "dev", network.bridge);
  await ip("addr", "add", `${nodeV6}/128`, "dev", network.bridge, "nodad");
  await ip("link", "set", network.bridge, "up");
  await ip("route", "add", subnets.v4, "dev", network.bridge, "src", nodeV4, "table", table);
  await ip("-6", "route", "add", subnets.v6, "dev", network.bridge, "src", nodeV6, "table", table);
  // The mark contract (docs/integration.md): network bits select the table, whatever else is set.
  const value = networkMark(network);
  const mask = (PROBE_FLAG | (0xffff << MARK_SHIFT)) >>> 0;
  for (const family of ["-4", "-6"]) {
    await ip(
      family,
      "rule",
      "add",
      "fwmark",
      `0x${value.toString(16)}/0x${mask.toString(16)}`,
      "lookup",
      table,
      "priority",
      "100",
    );
  }
}

/** The network mark of `network` (docs/integration.md's contract): what selects its table. */
function networkMark(network: NetworkSetting): number {
  return (PROBE_FLAG | (network.id << MARK_SHIFT)) >>> 0;
}

/**
 * The kubernetes Service address (10.96.0.1:443) in the node's namespace `netns`, as kube-proxy
 * would make it, translated to the API server's port on the node's loopback: the agent's
 * in-cluster config (host network), and that of pods of the fixed NETWORKS (the chart's netcheck
 * runner). A pod's connection arrives on its network's bridge: it is translated to loopback
 * (route_localnet on those bridges only) and given the network's mark, which the accepted socket
 * keeps (tcp_fwmark_accept), so the API server's answers take that network's table back to the
 * pod; the node's own table still leads into no pod network. Anything else arriving from outside
 * for a loopback address is dropped.
 */
export async function addKubernetesService(netns: string, port: string): Promise<void> {
  const marks = NETWORKS.map((n) => `"${n.bridge}" : 0x${networkMark(n).toString(16)}`);
  const service = "ip daddr 10.96.0.1 tcp dport 443";
  const sysctls = [
    "net.ipv4.tcp_fwmark_accept=1",
    ...NETWORKS.map((n) => `net.ipv4.conf.${n.bridge}.route_localnet=1`),
  ];
  await run(["nsenter", `--net=/run/netns/${netns}`, "--", "sysctl", "-qw", ...sysctls]);
  await run([
    "nsenter",
    `--net=/run/netns/${netns}`,
    "--",
    "nft",
    `add table ip lace_node; ` +
    `add chain ip lace_node out { type nat hook output priority -100; }; ` +
    `add rule ip lace_node out ${service} dnat to 127.0.0.1:${port}; ` +
    `add chain ip lace_node pod_mark { type filter hook prerouting priority -150; }; ` +
    `add rule ip lace_node pod_mark ${service} meta mark set iifname map { ${
      marks.join(", ")
    } }; ` +
    `add chain ip lace_node pod_nat { type nat hook prerouting priority -100; }; ` +
    `add rule ip lace_node pod_nat ${service} dnat to 127.0.0.1:${port}; ` +
    `add chain ip lace_node loopback_guard { type filter hook input priority 0; }; ` +
    `add rule ip lace_node loopback_guard iifname != "lo" ip daddr 127.0.0.0/8 ct status dnat accept; ` +
    `add rule ip lace_node loopback_guard iifname != "lo" ip daddr 127.0.0.0/8 drop`,
  ]);
}

/**
 * Pods of the fixed NETWORKS reach the kubernetes Service and the node's own IP `nodeIp` in the
 * namespace `netns`, as pods of a cluster do (the chart's `helm test` asks the API and the
 * agent's listener there): the networks' bridges answer ARP for the Service's address (proxy ARP,
 * which needs them to forward; the node's own addresses they answer anyway), and a connection to the node's IP arriving on a
 * network's bridge is given that network's mark, which the accepted socket keeps
 * (tcp_fwmark_accept, set by addKubernetesService), so its answers take that network's table back
 * to the pod. The node's own table still leads into no pod network, and a pod's address on the
 * node's pod ranges is still unreachable (no proxy answer). Needs addKubernetesService's table.
 */
export async function letPodsReachNode(netns: string, nodeIp: string): Promise<void> {
  const marks = NETWORKS.map((n) => `"${n.bridge}" : 0x${networkMark(n).toString(16)}`);
  // The kernel answers ARP for another host only on an interface that forwards.
  const sysctls = NETWORKS.flatMap((n) => [
    `net.ipv4.conf.${n.bridge}.forwarding=1`,
    `net.ipv4.conf.${n.bridge}.proxy_arp=1`,
    `net.ipv4.neigh.${n.bridge}.proxy_delay=0`,
  ]);
  await run(["nsenter", `--net=/run/netns/${netns}`, "--", "sysctl", "-qw", ...sysctls]);
  await run([
    "nsenter",
    `--net=/run/netns/${netns}`,
    "--",
    "nft",
    `add rule ip lace_node pod_mark ip daddr ${nodeIp} meta mark set iifname map { ${
      marks.join(", ")
    } }`,
  ]);
}
