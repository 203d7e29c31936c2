/**
 * What Lace says about a pod on the host network: it never has probe targets (the kubelet probes
 * it at the node's own addresses, never tagged), but a probe or hook of it that sets `host` makes
 * the kubelet connect there, and where that is another pod's address and probe port the
 * connection is tagged into that pod's network (the map knows the destination, never whose probe
 * it serves). The chart's admission policy refuses such a host; the agent reports any that got
 * through (no policy, an exempt namespace, a static pod). Pure.
 */
import { isObject } from "../text/json.ts";
import { canonicalAddress } from "../net/address.ts";
import { specialAddressKind } from "./addresses.ts";
import { connectingHandlers } from "./handlers.ts";
import { type Loose, type PodIdentity, str } from "./pod_fields.ts";
import { kindLabel } from "./kinds.ts";
import type { Skip } from "./skip.ts";

/**
 * Whether a probe `host` stays on the node itself or its link: "localhost", a loopback,
 * link-local or unspecified address. None of those is ever a probe target, so the kubelet's
 * connection there is never tagged. A host name other than "localhost" may resolve anywhere.
 */
export function isNodeLocalHost(host: string): boolean {
  if (host === "localhost") return true;
  try {
    const kind = specialAddressKind(canonicalAddress(host).address);
    return kind === "loopback" || kind === "link-local" || kind === "unspecified";
  } catch {
    return false;
  }
}

/**
 * The skips (reason "host") of a host-network pod's probes and lifecycle hooks whose `host` is
 * not node-local (isNodeLocalHost): the kubelet runs hooks whether or not they are targets, so
 * every hook counts. Empty for anything else.
 */
export function hostNetworkSkips(spec: Loose, pod: PodIdentity): Skip[] {
  const out: Skip[] = [];
  if (!isObject<Loose>(spec)) return out;
  const containers: unknown[] = [
    ...(Array.isArray(spec.containers) ? spec.containers : []),
    ...(Array.isArray(spec.initContainers)
      ? spec.initContainers.filter((c: Loose) => isObject<Loose>(c) && c.restartPolicy === "Always")
      : []),
  ];
  for (const c of containers) {
    if (!isObject<Loose>(c)) continue;
    const container = str(c.name) ?? "";
    for (const { kind, handler, action } of connectingHandlers(c, container, true, () => {})) {
      const host = handler === "grpc" ? undefined : action.host;
      if (host === undefined || host === null || host === "") continue;
      if (typeof host === "string" && isNodeLocalHost(host)) continue;
      out.push({
        pod,
        container,
        probe: kind,
        reason: "host",
        message: `${
          kindLabel(kind)
        } of container "${container}" of this host-network pod sets host ${
          JSON.stringify(host)
        }, which is not the node itself: the kubelet connects there, and where that is another pod's address and probe port, into that pod's network, as Lace cannot tell this probe from that pod's; set no host, or localhost`,
      });
    }
  }
  return out;
}
