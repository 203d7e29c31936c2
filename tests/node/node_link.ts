/**
 * Two real nodes' network namespaces joined by veth links, none through the machine's own
 * namespace: a control link (the second kubelet to the API server in the first node, the API
 * server to the second kubelet for exec) and one pod link per pod network. Every network
 * allocates from the same ranges, so one route per range cannot serve them all: each network's
 * routing table (network.ts, the one its mark selects) also routes the other node's range over
 * that network's own link, and what arrives on the network's bridge or link is routed by that
 * table only. The networks stay as isolated between the nodes as on one. Breaking a pod link cuts
 * that network's pods off from each other while both nodes stay in the cluster, as a failed link
 * between nodes does.
 */
import { run } from "../../lib/os/process.ts";
import type { NetworkSetting } from "./node_config.ts";

/** The control link's device and addresses (the second node's is its node IP). */
export const CONTROL_LINK = { device: "lctl0", first: "10.201.0.1", second: "10.201.0.2" };

/** The pod link of `network`: its device (in both namespaces) and each end's address. */
export function podLink(network: NetworkSetting) {
  return {
    device: `lpod${network.id}`,
    first: `10.202.${network.id}.1`,
    second: `10.202.${network.id}.2`,
  };
}

/** Priority of the rules that route what arrives on a network's bridge or link by its table. */
const INTERFACE_RULE_PRIORITY = 200;
/** Priority of the rules leakBetweenNetworks adds: before the networks' own. */
const LEAK_RULE_PRIORITY = 150;

/** One node as the link sees it. */
export interface LinkEnd {
  /** The node's network namespace (under /run/netns). */
  netns: string;
  /** The node's IPv4 pod range. */
  subnet4: string;
}

/** The routing table of a network (network.ts addNetworkNodeSide). */
function table(network: NetworkSetting): string {
  return String(100 + network.id);
}

function ipIn(end: LinkEnd) {
  return (...args: string[]) => run(["ip", "-n", end.netns, ...args]);
}

/**
 * Joins the two nodes' namespaces: the control link, and per network of `networks` a pod link
 * whose both ends route that network's pod ranges between the nodes. Each node forwards, answers
 * ARP on the network's bridge for the other node's pods (a pod sends everything on-link) and
 * routes by the network's table what arrives on its bridge or link. A network whose bridge is
 * not made yet (a namespace's, made on its first pod) is linked all the same: its bridge answers
 * ARP for the other node as every new device in the namespace does. Everything made here lives in the
 * two namespaces and goes with them.
 */
export async function linkNodes(
  first: LinkEnd,
  second: LinkEnd,
  networks: readonly NetworkSetting[],
): Promise<void> {
  const links = [CONTROL_LINK, ...networks.map(podLink)];
  for (const link of links) {
    await run([
      "ip",
      "-n",
      first.netns,
      "link",
      "add",
      link.device,
      "type",
      "veth",
      "peer",
      "name",
      link.device,
      "netns",
      second.netns,
    ]);
  }
  for (const [end, side] of [[first, "first"], [second, "second"]] as const) {
    const ipn = ipIn(end);
    const sysctl = (kv: string) =>
      run(["nsenter", `--net=/run/netns/${end.netns}`, "--", "sysctl", "-qw", kv]);
    await sysctl("net.ipv4.ip_forward=1");
    for (const link of links) {
      await ipn("addr", "add", `${link[side]}/24`, "dev", link.device);
      await ipn("link", "set", link.device, "up");
    }
    // Bridges made later (and the pods' host ends, where it does nothing) inherit this; their
    // ARP answers keep the kernel's default delay (up to 0.8 s), as neigh/default has none here.
    await sysctl("net.ipv4.conf.default.proxy_arp=1");
    for (const network of networks) {
      const made = await ipn("link", "show", "dev", network.bridge).then(() => true, () => false);
      if (made) {
        await sysctl(`net.ipv4.conf.${network.bridge}.proxy_arp=1`);
        await sysctl(`net.ipv4.neigh.${network.bridge}.proxy_delay=0`);
      }
      for (const dev of [network.bridge, podLink(network).device]) {
        await ipn(
          "rule",
          "add",
          "iif",
          dev,
          "lookup",
          table(network),
          "priority",
          String(INTERFACE_RULE_PRIORITY),
        );
      }
    }
  }
  for (const network of networks) await routePodRanges(first, second, network);
}

/** Routes each node's pod range of `network` over its pod link from the other node. */
async function routePodRanges(
  first: LinkEnd,
  second: LinkEnd,
  network: NetworkSetting,
): Promise<void> {
  const link = podLink(network);
  const routes = [[first, second, link.second], [second, first, link.first]] as const;
  for (const [end, other, via] of routes) {
    await ipIn(end)(
      "route",
      "replace",
      other.subnet4,
      "via",
      via,
      "dev",
      link.device,
      "table",
      table(network),
    );
  }
}

/**
 * Takes `network`'s pod link down (or up again) from the second node's side; both ends lose
 * carrier. Taking a device down removes the routes through it, so bringing it up puts them back.
 */
export async function setPodLink(
  first: LinkEnd,
  second: LinkEnd,
  network: NetworkSetting,
  up: boolean,
): Promise<void> {
  await ipIn(second)("link", "set", podLink(network).device, up ? "up" : "down");
  if (up) await routePodRanges(first, second, network);
}

/**
 * Drops (or, with `cut` false, stops dropping) new connections forwarded from `from`'s pods on
 * `network` towards `to`'s pod range, in `from`'s namespace: one direction cut, while replies
 * of connections `to`'s pods open still pass.
 */
export async function setOneWayCut(
  from: LinkEnd,
  to: LinkEnd,
  network: NetworkSetting,
  cut: boolean,
): Promise<void> {
  const nft = (script: string) =>
    run(["nsenter", `--net=/run/netns/${from.netns}`, "--", "nft", script]);
  if (!cut) return void await nft("delete table ip lace_cut");
  await nft(
    "add table ip lace_cut; " +
      "add chain ip lace_cut forward { type filter hook forward priority 0; policy accept; }; " +
      `add rule ip lace_cut forward iifname "${network.bridge}" ip daddr ${to.subnet4} ` +
      "ct state new drop",
  );
}

/**
 * Breaks isolation on the node `end` (a misrouting node, not a change to any pod): what its pods
 * of `a` send to its own pod range is routed into `b`'s bridge and the reverse, so a pod of one
 * network reaches the other network's pod on this node at that pod's address. Returns the undo.
 * Only rules in the node's namespace.
 */
export async function leakBetweenNetworks(
  end: LinkEnd,
  a: NetworkSetting,
  b: NetworkSetting,
): Promise<() => Promise<void>> {
  const rules = [[a, b], [b, a]].map(([from, to]) => [
    "iif",
    from.bridge,
    "to",
    end.subnet4,
    "lookup",
    table(to),
    "priority",
    String(LEAK_RULE_PRIORITY),
  ]);
  const ipn = ipIn(end);
  const undo = async () => {
    for (const rule of rules) await ipn("rule", "del", ...rule).catch(() => {});
  };
  try {
    for (const rule of rules) await ipn("rule", "add", ...rule);
  } catch (error) {
    await undo();
    throw error;
  }
  return undo;
}
