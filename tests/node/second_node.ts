/**
 * A second real node joined to the first (tests/node/node.ts started with `cluster`): its own
 * network, mount and PID namespaces and cgroups, its own containerd (with the first node's
 * images, Lace's included) and kubelet registered with the first node's API server, its conflist
 * chaining `lace` as the first node's does; no controller manager or scheduler (the first node's
 * serve both). installLaceOnNodes (chart.ts) runs the agent on it. The nodes are joined by the
 * links of node_link.ts, one per pod network: the kubelet reaches the API server over the control
 * link through a relay at the same loopback port as in the first node (so the same kubeconfig
 * works, and the agent's in-cluster address is translated to it as on the first node), and the
 * API server reaches the kubelet at its node IP on that link. close() tears down everything made
 * here, also after a failed start.
 */
import { join } from "node:path";
import { ManagedProcess } from "../kube/_process.ts";
import { nodeToolPaths } from "../kube/tools.ts";
import { waitFor } from "../helpers/wait.ts";
import { makeNodeCgroups } from "./cgroups.ts";
import { enterNodeNamespaces } from "./namespaces.ts";
import {
  addKubernetesService,
  createNodeNetwork,
  NETWORKS,
  POD_SUBNET4,
  type PodSubnets,
} from "./network.ts";
import type { NetworkSetting } from "./node_config.ts";
import type { Node } from "./node.ts";
import {
  CONTROL_LINK,
  leakBetweenNetworks,
  linkNodes,
  setOneWayCut,
  setPodLink,
} from "./node_link.ts";
import { startNodeRuntime } from "./node_runtime.ts";
import { beginNodeStart } from "./node_start.ts";
import { pluginStateDir } from "./net_plugin_setup.ts";

/** The second node's pod ranges, beside the first node's POD_SUBNET4 / POD_SUBNET6. */
export const SECOND_SUBNETS: PodSubnets = { v4: "10.244.2.0/24", v6: "fd00:245::/64" };

export interface SecondNode {
  readonly name: string;
  /** The run's directory (the chart's node paths are under it). */
  readonly dir: string;
  /** The kubelet's own cgroup v2 directory (the chart's node.kubeletCgroupPath). */
  readonly kubeletCgroup: string;
  /** The node's pid 1 as the machine sees it: `nsenter --target` enters the node through it. */
  readonly initPid: number;
  /** Measured start-up phases in ms. */
  readonly timings: Record<string, number>;
  /** Takes the pod link of `network` between the two nodes down (false) or up again (true). */
  setPodLink(up: boolean): Promise<void>;
  /**
   * Breaks isolation between networks `a` and `b` on this node (node_link.ts
   * leakBetweenNetworks); returns the undo.
   */
  leakBetween(a: NetworkSetting, b: NetworkSetting): Promise<() => Promise<void>>;
  /**
   * Drops (true) or lets through again (false) new connections from this node's pods to the
   * first node's; the other direction keeps working.
   */
  cutTowardsFirst(cut: boolean): Promise<void>;
  /** Runs a command inside the node's namespaces and returns its stdout. */
  exec(cmd: string[]): Promise<string>;
  /** Logs of the node's processes, for a failure message. */
  logs(maxLines?: number): Promise<string>;
  close(): Promise<void>;
}

export interface SecondNodeOptions {
  /**
   * The network pods join by their namespace, and whose pod link setPodLink and
   * cutTowardsFirst break; every network of NETWORKS is linked.
   */
  network: NetworkSetting;
  /** Namespaces whose pods join `network` without a label (as the first node's `cluster`). */
  namespaces: string[];
  /**
   * As the first node's networkPerNamespace (scripts/dev node): a namespace's network has the
   * same id on both nodes (the first node's networks file) and is linked if its id is at most
   * `linkedNetworks`.
   */
  networkPerNamespace?: boolean;
  /** How many network ids (from 1) get a pod link; default the fixed NETWORKS only. */
  linkedNetworks?: number;
  /** false: `lace` is not chained by hand, as NodeOptions.chainLace (the chart chains it). */
  chainLace?: boolean;
}

/** The network of id `id`: a fixed one, or a namespace's, whatever its name will be. */
function networkOfId(id: number): NetworkSetting {
  return NETWORKS.find((n) => n.id === id) ??
    { name: `namespace network ${id}`, id, bridge: `lnet${id}` };
}

/**
 * Starts the second node, links it to `first` and waits until it is Ready in the API. Any
 * failure tears down what was made and rethrows with the node's logs.
 */
export async function joinSecondNode(
  first: Node,
  options: SecondNodeOptions,
): Promise<SecondNode & AsyncDisposable> {
  const tools = await nodeToolPaths();
  const { name, dir, cleanup, timings, logFiles, mark, logs } = await beginNodeStart();
  const firstEnd = { netns: first.name, subnet4: POD_SUBNET4 };
  const secondEnd = { netns: name, subnet4: SECOND_SUBNETS.v4 };

  try {
    await createNodeNetwork(name, cleanup, SECOND_SUBNETS);
    const linked = options.linkedNetworks ?? NETWORKS.length;
    await linkNodes(
      firstEnd,
      secondEnd,
      Array.from({ length: linked }, (_, i) => networkOfId(i + 1)),
    );
    mark("network");
    const { pidsRoot, kubeletCgroup } = await makeNodeCgroups(name, cleanup);
    const cniBin = "/opt/cni/bin";
    const node = await enterNodeNamespaces({
      netns: name,
      dir,
      pidsRoot,
      laceTree: first.laceTree,
      cniBin,
      cleanup,
      logFiles,
    });

    // The API server's port, relayed over the control link: the first node's side listens on
    // its link address, this node's on its loopback, so the first node's kubeconfig holds.
    const port = new URL(first.controlPlane.url).port;
    const relayLog = join(dir, "api-relay-first.log");
    logFiles.push(relayLog);
    const firstSide = await ManagedProcess.spawn("nsenter", [
      `--net=/run/netns/${first.name}`,
      "--",
      "socat",
      `TCP-LISTEN:${port},bind=${CONTROL_LINK.first},reuseaddr,fork`,
      `TCP:127.0.0.1:${port}`,
    ], relayLog);
    cleanup.push(() => firstSide.stop(1000));
    await node.spawn("api-relay", [
      "socat",
      `TCP-LISTEN:${port},bind=127.0.0.1,reuseaddr,fork`,
      `TCP:${CONTROL_LINK.first}:${port}`,
    ]);
    await waitFor(async () => {
      const probe = await node.execResult([
        "socat",
        "-u",
        "OPEN:/dev/null",
        `TCP:127.0.0.1:${port}`,
      ]);
      return probe.success;
    }, { timeout: 10_000, interval: 250, message: "the API server relay over the control link" });
    // The kubernetes Service address, as on the first node (node.ts), for the agent.
    await addKubernetesService(name, port);
    mark("control link");

    await startNodeRuntime({
      name,
      dir,
      tools,
      node,
      cleanup,
      plane: first.controlPlane,
      images: first.archives,
      cniBin,
      caFile: first.caFile,
      tokenFile: first.tokenFile,
      kubeletCgroup,
      nodeIp: CONTROL_LINK.second,
      kubeletAddress: CONTROL_LINK.second,
      clientCAFile: first.caFile,
      subnets: SECOND_SUBNETS,
      namespaceNetworks: Object.fromEntries(
        options.namespaces.map((n) => [n, options.network.name]),
      ),
      ...(options.networkPerNamespace && {
        networkPerNamespace: true,
        networksFile: join(pluginStateDir(first.dir), "networks.json"),
      }),
      ...(options.chainLace === false && { noAgent: true }),
      mark,
    });

    const close = () => cleanup.run();
    return {
      name,
      dir,
      kubeletCgroup,
      initPid: node.initPid,
      timings,
      setPodLink: (up) => setPodLink(firstEnd, secondEnd, options.network, up),
      leakBetween: (a, b) => leakBetweenNetworks(secondEnd, a, b),
      cutTowardsFirst: (cut) => setOneWayCut(secondEnd, firstEnd, options.network, cut),
      exec: node.exec,
      logs,
      close,
      [Symbol.asyncDispose]: close,
    };
  } catch (error) {
    const text = await logs(30);
    await cleanup.run().catch((e) => console.error(e));
    throw new Error(`The second node did not start: ${error}\n${text}`, { cause: error });
  }
}
