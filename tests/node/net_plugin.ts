/**
 * `lace-testnet`, the real node's pod network plugin (a CNI plugin run by containerd): attaches
 * each pod to one of several isolated networks, chosen by the pod's label
 * `lace-test.io/network` (or by its namespace where the conflist names one), allocating from the
 * SAME range in every network, so pods on this node can share addresses. Each network hands
 * out addresses round-robin like host-local (ipam.ts), so an ADD refused by the chained `lace`
 * (an address another network's pod holds) is retried by the runtime with the next address; a
 * pod may ask for a host number with the label `lace-test.io/host-index` (as an IPAM that
 * honours a requested address), refused if that network has it in use. It writes `lace.io/network` and `lace.io/network-id` on the pod as the
 * trusted writer (the node's network plugin, as in production), and its result is the
 * prevResult of the chained `lace` plugin. The node side of each network (a bridge, a routing
 * table selected by the mark contract) is made by tests/node/network.ts.
 *
 * Run by a launcher as `deno run --allow-all net_plugin.ts` with CNI_* in the environment.
 */
import { run } from "../../lib/os/process.ts";
import { type Allocations, chooseHost } from "./ipam.ts";
import { namespaceNetwork, networkNames } from "./namespace_networks.ts";
import type { ConflistSettings, NetworkSetting } from "./node_config.ts";

/** The plugin's entry of the conflist (node_config.ts writes it), with the spec's version. */
type Conf = ConflistSettings & { cniVersion: string };

const NETWORK_LABEL = "lace-test.io/network";
/** "ipv6" gives the pod an IPv6 address only (probe_pods.ts FAMILY_LABEL); else both families. */
const FAMILY_LABEL = "lace-test.io/family";
/** A requested host number (ipam.ts chooseHost). */
const HOST_INDEX_LABEL = "lace-test.io/host-index";
/** The allocations' file of uniqueAddresses, shared by every network. */
const NODE_POOL = "_node";

function fail(code: number, msg: string): never {
  console.log(JSON.stringify({ cniVersion: "1.0.0", code, msg }));
  Deno.exit(1);
}

function cniArgs(): Record<string, string> {
  const args: Record<string, string> = {};
  for (const pair of (Deno.env.get("CNI_ARGS") ?? "").split(";")) {
    const eq = pair.indexOf("=");
    if (eq > 0) args[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return args;
}

async function api(conf: Conf, method: string, path: string, body?: unknown): Promise<unknown> {
  const client = Deno.createHttpClient({ caCerts: [await Deno.readTextFile(conf.caFile)] });
  const token = (await Deno.readTextFile(conf.tokenFile)).trim();
  try {
    const response = await fetch(`${conf.apiServer}${path}`, {
      method,
      client,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { "content-type": "application/merge-patch+json" }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${method} ${path}: HTTP ${response.status} ${text}`);
    return JSON.parse(text);
  } finally {
    client.close();
  }
}

/** Allocations of one network (ipam.ts), in a file locked while used. */
async function withAllocations<T>(
  conf: Conf,
  network: string,
  change: (allocations: Allocations) => T,
): Promise<T> {
  await Deno.mkdir(conf.stateDir, { recursive: true });
  const path = `${conf.stateDir}/${network}.json`;
  const file = await Deno.open(path, { read: true, write: true, create: true });
  try {
    await file.lock(true);
    const text = await Deno.readTextFile(path);
    const allocations: Allocations = text ? JSON.parse(text) : { byContainer: {} };
    const result = change(allocations);
    await Deno.writeTextFile(path, JSON.stringify(allocations));
    return result;
  } finally {
    file.close();
  }
}

function hostName(containerId: string): string {
  return `lt${containerId.slice(0, 12)}`;
}

function prefix4(subnet: string): string {
  return subnet.split("/")[0].split(".").slice(0, 3).join(".");
}

async function add(conf: Conf, containerId: string, netns: string, ifname: string) {
  const args = cniArgs();
  const namespace = args.K8S_POD_NAMESPACE, name = args.K8S_POD_NAME;
  if (!namespace || !name) fail(4, "CNI_ARGS has no K8S_POD_NAMESPACE and K8S_POD_NAME");
  const pod = await api(conf, "GET", `/api/v1/namespaces/${namespace}/pods/${name}`) as {
    metadata: { labels?: Record<string, string> };
  };
  const wanted = pod.metadata.labels?.[NETWORK_LABEL] ?? conf.namespaceNetworks?.[namespace] ??
    (conf.networkPerNamespace ? namespace : undefined);
  const ipv6Only = conf.ipv6Only === true || pod.metadata.labels?.[FAMILY_LABEL] === "ipv6";
  const requestedLabel = pod.metadata.labels?.[HOST_INDEX_LABEL];
  const requested = requestedLabel === undefined ? undefined : Number(requestedLabel);
  let network: NetworkSetting | undefined = conf.networks.find((n) => n.name === wanted);
  if (!network && conf.networkPerNamespace && wanted !== undefined) {
    try {
      network = await namespaceNetwork(conf, wanted);
    } catch (error) {
      fail(7, `pod ${namespace}/${name}: ${error instanceof Error ? error.message : error}`);
    }
  }
  if (!network) fail(7, `pod ${namespace}/${name} has no valid ${NETWORK_LABEL} label`);
  // With uniqueAddresses one pool for every network: no two networks hold an address here.
  const pool = conf.uniqueAddresses ? NODE_POOL : network.name;
  const index = await withAllocations(conf, pool, (allocations) => {
    const held = allocations.byContainer[containerId];
    if (held !== undefined) return held;
    const next = chooseHost(allocations, requested);
    if (next === undefined) {
      fail(
        11,
        requested === undefined
          ? `network ${network.name} is full`
          : `host ${requestedLabel} is not free in network ${network.name}`,
      );
    }
    allocations.byContainer[containerId] = next;
    allocations.last = next;
    return next;
  });
  const v4 = `${prefix4(conf.subnet4)}.${index}`;
  const v6 = `${conf.subnet6.split("/")[0].replace(/::$/, "::")}${index.toString(16)}`;
  const host = hostName(containerId);
  const inPod = (cmd: string[]) => run(["nsenter", `--net=${netns}`, "--", ...cmd]);
  await run(["ip", "link", "del", host]).catch(() => {});
  await run(["ip", "link", "add", host, "type", "veth", "peer", "name", ifname, "netns", netns]);
  await run(["ip", "link", "set", host, "master", network.bridge, "up"]);
  await inPod(["sysctl", "-qw", `net.ipv6.conf.${ifname}.accept_dad=0`]).catch(() => {});
  if (!ipv6Only) await inPod(["ip", "addr", "add", `${v4}/24`, "dev", ifname]);
  await inPod(["ip", "addr", "add", `${v6}/64`, "dev", ifname, "nodad"]);
  await inPod(["ip", "link", "set", ifname, "up"]);
  // Everything leaves through eth0 on-link: the node's address of this network answers ARP/ND.
  if (!ipv6Only) await inPod(["ip", "route", "add", "default", "dev", ifname]);
  await inPod(["ip", "-6", "route", "add", "default", "dev", ifname]);
  const mac = (await inPod(["cat", `/sys/class/net/${ifname}/address`])).trim();
  // Addresses are reused: the node may still hold the previous holder's MAC for this one (the
  // kubelet probed it), and would send the new pod's first probes to a gone interface until the
  // entry aged out. A real bridge plugin announces the new MAC (gratuitous ARP); forgetting the
  // old one has the same effect.
  for (const address of ipv6Only ? [v6] : [v4, v6]) {
    await run(["ip", "neigh", "flush", "to", address, "dev", network.bridge]);
  }
  await api(conf, "PATCH", `/api/v1/namespaces/${namespace}/pods/${name}`, {
    metadata: {
      annotations: { "lace.io/network": network.name, "lace.io/network-id": String(network.id) },
    },
  });
  console.log(JSON.stringify({
    cniVersion: conf.cniVersion,
    interfaces: [{ name: host }, { name: ifname, mac, sandbox: netns }],
    ips: [
      ...(ipv6Only ? [] : [{ address: `${v4}/24`, interface: 1 }]),
      { address: `${v6}/64`, interface: 1 },
    ],
  }));
}

async function del(conf: Conf, containerId: string) {
  for (const network of [...await networkNames(conf), NODE_POOL]) {
    await withAllocations(conf, network, (allocations) => {
      delete allocations.byContainer[containerId];
    });
  }
  await run(["ip", "link", "del", hostName(containerId)]).catch(() => {});
  console.log("{}");
}

const conf = JSON.parse(await new Response(Deno.stdin.readable).text()) as Conf;
const command = Deno.env.get("CNI_COMMAND");
const containerId = Deno.env.get("CNI_CONTAINERID") ?? "";
try {
  switch (command) {
    case "ADD":
      await add(conf, containerId, Deno.env.get("CNI_NETNS") ?? "", Deno.env.get("CNI_IFNAME")!);
      break;
    case "DEL":
      await del(conf, containerId);
      break;
    case "VERSION":
      console.log(JSON.stringify({
        cniVersion: "1.0.0",
        supportedVersions: ["0.4.0", "1.0.0", "1.1.0"],
      }));
      break;
    default:
      // CHECK, GC and STATUS: nothing to verify or collect in this test network.
      break;
  }
} catch (error) {
  fail(999, `lace-testnet ${command} failed: ${error}`);
}
