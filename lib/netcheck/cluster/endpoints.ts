/**
 * The endpoints of each network's probe pods: which pods are ready and the
 * address of the chosen family each is tested at, sorted by node.
 */
import { addressOfFamily } from "./address.ts";
import type { Endpoint, NetcheckCluster, NetworkEndpoint } from "./netcheck_cluster.ts";
import type { ProbeNetwork } from "./manifest.ts";
import type { NetcheckOptions } from "../options.ts";
import { SetupError } from "./errors.ts";
import { waitForProbePods, type WaitOptions } from "./readiness.ts";

/** Picks each ready pod's address of the chosen family; a pod without one fails the setup. */
function endpointsOf(
  pods: { name: string; nodeName: string; podIPs: string[] }[],
  family: NetcheckOptions["ipFamily"],
): Endpoint[] {
  const endpoints = pods.map((pod) => {
    const address = addressOfFamily(pod.podIPs, family);
    if (!address) {
      throw new SetupError(
        `Probe pod "${pod.name}" on node "${pod.nodeName}" has no ${family} address in ` +
          `status.podIPs (${pod.podIPs.join(", ") || "none"}); choose another --ip-family`,
      );
    }
    return { pod: pod.name, node: pod.nodeName, address };
  });
  return endpoints.sort((a, b) => a.node < b.node ? -1 : a.node > b.node ? 1 : 0);
}

/** The nodes of the endpoints of every network, sorted, each once. */
export function nodeNames(perNetwork: NetworkEndpoint[][]): string[] {
  const nodes = new Set<string>();
  for (const endpoints of perNetwork) for (const e of endpoints) nodes.add(e.node);
  return [...nodes].sort();
}

/** The ready probe pods of every network now (a watch round picks up nodes that came and went). */
export async function listEndpoints(
  cluster: NetcheckCluster,
  networks: ProbeNetwork[],
  options: NetcheckOptions,
): Promise<NetworkEndpoint[][]> {
  const out: NetworkEndpoint[][] = [];
  for (const [index, network] of networks.entries()) {
    const pods = (await cluster.listPods(network.namespace, network.selector))
      .filter((p) => p.ready && addressOfFamily(p.podIPs, options.ipFamily));
    out.push(
      endpointsOf(pods, options.ipFamily).map((e) => ({
        ...e,
        ...(network.namespace === options.namespace ? {} : { namespace: network.namespace }),
        network: index,
      })),
    );
  }
  return out;
}

/**
 * Waits for each network's probe pods and keeps only their endpoints: the
 * listed pods (a few hundred bytes each with their status) are dropped here,
 * not held by the run for its whole length. Pods
 * left out are added to `skippedNodes`; fewer than two ready in a network
 * fails the setup.
 */
export async function waitForEndpoints(
  cluster: NetcheckCluster,
  networks: ProbeNetwork[],
  options: NetcheckOptions,
  skippedNodes: { node: string; reason: string }[],
  wait: Pick<WaitOptions, "pollMs" | "signal" | "timers">,
): Promise<NetworkEndpoint[][]> {
  const multi = networks.length > 1;
  const perNetwork: NetworkEndpoint[][] = [];
  for (const [index, network] of networks.entries()) {
    const { ready, skipped } = await waitForProbePods(cluster, {
      namespace: network.namespace,
      daemonSet: network.daemonSet,
      selector: network.selector,
      timeoutMs: options.readyTimeoutMs,
      ...wait,
    });
    skippedNodes.push(...skipped.map((s) => ({
      node: (s.pod.nodeName || s.pod.name) + (multi ? ` (network ${network.name})` : ""),
      reason: s.reason,
    })));
    const endpoints = endpointsOf(ready, options.ipFamily).map((e) => ({
      ...e,
      ...(network.namespace === options.namespace ? {} : { namespace: network.namespace }),
      network: index,
    }));
    if (endpoints.length < 2) {
      throw new SetupError(
        `Only ${endpoints.length} probe pod is ready` +
          (multi ? ` in network "${network.name}"` : "") +
          "; netcheck needs at least two nodes",
      );
    }
    perNetwork.push(endpoints);
  }
  return perNetwork;
}
