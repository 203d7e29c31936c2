/**
 * The node the desired-state unit tests compute over: the agent's config, running pods of the
 * agent tests' shape with one TCP readiness probe per port, and desiredState() over a pod cache
 * that holds them.
 */
import { desiredState, type DesiredStateConfig } from "../../lib/rules/desired_state.ts";
import type { RulesMemo } from "../../lib/rules/address_placement.ts";
import type { Pod } from "../../lib/pods/pod.ts";
import type { PodNetwork } from "../../lib/rules/pod_network.ts";
import { pod as podIn, podLookups } from "./core_world.ts";

export const CONFIG: DesiredStateConfig = {
  networkAnnotation: "lace.io/network",
  networkIdAnnotation: "lace.io/network-id",
  probeMark: 0x1000,
  markShift: 16,
  addressConflict: "fail-closed",
  addressSharing: "exclusive",
  maxTargetsPerPod: 64,
};

/**
 * A running pod at `ip` in network `networkId` (none: the default network), the agent tests'
 * pod of that network, with one TCP readiness probe per port.
 */
export function pod(
  uid: string,
  ip: string,
  networkId: number | undefined,
  ports = [8080],
  created = "2026-01-01T00:00:00Z",
): Pod {
  const p = podIn(uid, ip, networkId, created);
  p.spec.containers = ports.map((port, i) => ({
    name: `c${i}`,
    readinessProbe: { tcpSocket: { port } },
  }));
  return p;
}

/** desiredState over these pods; a uid mapped to an Error makes the cache throw for it. */
export function compute(
  pods: (Pod | [string, Error])[],
  opts: {
    nodeNetworks?: Map<string, PodNetwork>;
    capacity?: number;
    config?: Partial<DesiredStateConfig>;
    memo?: RulesMemo;
    hostAddresses?: ReadonlySet<string>;
    /** The cache's identity of a pod (default: namespace ns, name p-<uid>). */
    identity?: (uid: string) => { namespace: string; name: string; uid: string } | undefined;
  } = {},
) {
  const byUid = new Map(
    pods.map((p) => Array.isArray(p) ? p : [p.metadata.uid, p] as [string, Pod | Error]),
  );
  return desiredState({
    uids: [...byUid.keys()],
    pods: {
      ...podLookups(byUid),
      identity: opts.identity ?? ((uid) => ({ namespace: "ns", name: `p-${uid}`, uid })),
    },
    nodeNetworks: opts.nodeNetworks ?? new Map(),
    config: { ...CONFIG, ...opts.config },
    capacity: opts.capacity ?? 1000,
    memo: opts.memo ?? new WeakMap(),
    ...(opts.hostAddresses ? { hostAddresses: opts.hostAddresses } : {}),
  });
}
