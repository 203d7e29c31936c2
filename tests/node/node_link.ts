/**
 * Two real nodes' network namespaces joined by two veth links, neither through the machine's
 * own namespace: a control link (the second kubelet to the API server in the first node, the
 * API server to the second kubelet for exec) and a pod link that routes each node's pod range
 * of one network to the other. Breaking the pod link cuts the pods off from each other while
 * both nodes stay in the cluster, as a failed link between nodes does.
 */
import { run } from "../../lib/cli/process.ts";
import { bridgeAddress4 } from "./network.ts";
import type { NetworkSetting } from "./node_config.ts";

/** The control link's device and addresses (the second node's is its node IP). */
export const CONTROL_LINK = { device: "lctl0", first: "10.201.0.1", second: "10.201.0.2" };
/** The pod link's device (in both namespaces) and addresses. */
export const POD_LINK = { device: "lpod0", first: "10.202.0.1", second: "10.202.0.2" };

/** One node as the link sees it. */
export interface LinkEnd {
  /** The node's network namespace (under /run/netns). */
  netns: string;
  /** The node's IPv4 pod range. */
  subnet4: string;
}

/**
 * Joins the two nodes' namespaces and routes `network`'s pod ranges between them: each node
 * forwards, answers ARP on the network's bridge for the other node's pods (a pod sends
 * everything on-link), routes its own range into the bridge and the other range over the pod
 * link. Everything made here lives in the two namespaces and goes with them.
 */
export async function linkNodes(
  first: LinkEnd,
  second: LinkEnd,
  network: NetworkSetting,
): Promise<void> {
  for (const link of [CONTROL_LINK, POD_LINK]) {
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
  const ends = [
    { end: first, control: CONTROL_LINK.first, pod: POD_LINK.first },
    { end: second, control: CONTROL_LINK.second, pod: POD_LINK.second },
  ];
  for (const { end, control, pod } of ends) {
    const ipn = (...args: string[]) => run(["ip", "-n", end.netns, ...args]);
    const sysctl = (kv: string) =>
      run(["nsenter", `--net=/run/netns/${end.netns}`, "--", "sysctl", "-qw", kv]);
    await ipn("addr", "add", `${control}/24`, "dev", CONTROL_LINK.device);
    await ipn("addr", "add", `${pod}/24`, "dev", POD_LINK.device);
    await ipn("link", "set", CONTROL_LINK.device, "up");
    await ipn("link", "set", POD_LINK.device, "up");
    await sysctl("net.ipv4.ip_forward=1");
    await sysctl(`net.ipv4.conf.${network.bridge}.proxy_arp=1`);
    await sysctl(`net.ipv4.neigh.${network.bridge}.proxy_delay=0`);
    await ipn("route", "add", end.subnet4, "dev", network.bridge, "src", bridgeAddress4(network));
  }
  await routePodRanges(first, second);
}

/** Routes each node's pod range over the pod link from the other node (replacing any route). */
async function routePodRanges(first: LinkEnd, second: LinkEnd): Promise<void> {
  const routes = [[first, second, POD_LINK.second], [second, first, POD_LINK.first]] as const;
  for (const [end, other, via] of routes) {
    await run([
      "ip",
      "-n",
      end.netns,
      "route",
      "replace",
      other.subnet4,
      "via",
      via,
      "dev",
      POD_LINK.device,
    ]);
  }
}

/**
 * Takes the pod link down (or up again) from the second node's side; both ends lose carrier.
 * Taking a device down removes the routes through it, so bringing it up puts them back.
 */
export async function setPodLink(first: LinkEnd, second: LinkEnd, up: boolean): Promise<void> {
  await run(["ip", "-n", second.netns, "link", "set", POD_LINK.device, up ? "up" : "down"]);
  if (up) await routePodRanges(first, second);
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
