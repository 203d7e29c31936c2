/**
 * Where a live pod sits on this node: its network and its own addresses,
 * whatever its probes are.
 */
import { hasFinished, type Pod } from "../pods/pod.ts";
import type { ProbeKey } from "../probe/key.ts";
import { isObject } from "../text/json.ts";
import { type Loose, podAddresses, type PodIdentity, podIdentity } from "./pod_fields.ts";
import { DEFAULT_NETWORK, type PodNetwork, podNetwork, type TargetOptions } from "./pod_network.ts";

/** Where a live pod sits on this node: its network (undefined when unknown) and its addresses. */
export interface PodPlacement {
  pod: PodIdentity;
  network: PodNetwork | undefined;
  addresses: ProbeKey[];
  /**
   * The agent cannot read the pod's probes (refused as too large, or not evaluable): any port
   * at its addresses may be one the kubelet probes it on.
   */
  probesUnknown?: true;
}

/**
 * The network and the addresses of a pod that holds them on this node now,
 * or undefined for a pod that holds none: on the host network, or finished
 * (Succeeded/Failed). The network is `node` when the node attached the pod,
 * else the annotations', else DEFAULT_NETWORK; undefined when the annotations
 * are malformed (the agent then holds the addresses as UNKNOWN_NETWORK:
 * addressPlacement). Addresses as in probeTargetsForPod (ports are 0).
 */
export function podPlacement(
  pod: Pod,
  opts: TargetOptions,
  node?: PodNetwork,
): PodPlacement | undefined {
  const p: Loose = pod;
  if (!isObject<Loose>(p) || !isObject<Loose>(p.spec)) return undefined;
  const status = p.status;
  if (p.spec.hostNetwork === true || hasFinished(p)) return undefined;
  const annotations = isObject<Loose>(p.metadata) && isObject<Loose>(p.metadata.annotations)
    ? p.metadata.annotations
    : {};
  const net = node ?? podNetwork(annotations, opts) ?? DEFAULT_NETWORK;
  return {
    pod: podIdentity(pod),
    network: typeof net === "string" ? undefined : net,
    addresses: podAddresses(status).addresses,
  };
}
