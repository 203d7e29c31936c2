/**
 * The rules: which (family, address, port) targets a pod's probes need in the
 * probe map. Pure code over plain data, so every rule is unit-tested and the
 * agent can never crash on a strange pod: anything it cannot use becomes a
 * `Skip` with a reason and a message, never an exception.
 */
import { hasFinished, type Pod } from "../pods/pod.ts";
import { canonicalAddress } from "../net/address.ts";
import type { ProbeKey } from "../probe/key.ts";
import { isObject } from "../text/json.ts";
import { networkLabel } from "../probe/network_name.ts";
import { type Loose, podAddresses, type PodIdentity, podIdentity, str } from "./pod_fields.ts";
import {
  DEFAULT_NETWORK,
  type NetworkMismatch,
  type PodNetwork,
  podNetwork,
  sameNetwork,
  type TargetOptions,
} from "./pod_network.ts";
import { resolvePort } from "./probe_port.ts";
import { connectingHandlers, type MalformedHandler } from "./handlers.ts";
import { hostNetworkSkips } from "./host_network.ts";
import { kindLabel, type ProbeHandler, type TargetKind } from "./kinds.ts";
import type { Skip, SkipReason } from "./skip.ts";

/** One key the kubelet will connect to, and why. */
export interface Target {
  key: ProbeKey;
  networkId: number;
  network: string;
  pod: PodIdentity;
  /**
   * The first container and probe or hook (in spec order) that needs this
   * key; a key several of them use is one target, named by the first.
   */
  container: string;
  /** The probe or lifecycle hook served (the field keeps its name for every consumer). */
  probe: TargetKind;
  handler: ProbeHandler;
  http?: { path: string; scheme: string };
  /** The probe's periodSeconds when the spec sets one (the kubelet's default is 10); never on hooks. */
  periodSeconds?: number;
}

/** A pod's targets, the probes it had to skip, and a network mismatch if any. */
export interface PodTargets {
  targets: Target[];
  skipped: Skip[];
  mismatch?: NetworkMismatch;
  /**
   * For a pod on the default network: the keys its probes use, in
   * DEFAULT_NETWORK. They get no map entry, but they are claims: the kubelet
   * connects to them, so no other network's target may hold the same key.
   */
  claims?: Target[];
}

/**
 * Computes a pod's probe targets and the probes it had to skip. Targets are
 * the ports of its probes (httpGet, tcpSocket, grpc) and, unless
 * `opts.lifecycleHooks` is false, of its postStart and preStop httpGet hooks:
 * the kubelet connects to both the same way, so a hook that is not a target
 * goes to the host's network and fails. The pod's
 * network is `node`, the network the node attached it to (the chained CNI
 * plugin's ADD), whenever that is known: annotations, which the pod's author
 * can write, then only count for a report when they disagree (`mismatch`).
 * Without `node` the annotations decide. A pod gets
 * targets only when it has a Lace network, an address, is not
 * on the host network and has not finished (phase Succeeded/Failed); a
 * host-network pod's probes and hooks whose `host` is not the node's are
 * reported (hostNetworkSkips: the kubelet's connection there may be tagged
 * into another pod's network). A pod with
 * a deletionTimestamp keeps its targets: it is still in graceful termination and
 * the kubelet keeps probing it until its containers stop, so it loses them when
 * it leaves the sources (deleted) or reaches a final phase. A probe `host`
 * other than one of the pod's own IPs gets no target: the kubelet would connect
 * elsewhere, and marking that connection into the pod's overlay would let a
 * pod steer the kubelet at another tenant (server-side request forgery).
 * Hooks follow every rule probes do. Each key appears once: the first
 * container and probe or hook in spec order describes it (within a container:
 * liveness, readiness, startup, postStart, preStop).
 */
export function probeTargetsForPod(
  pod: Pod,
  opts: TargetOptions,
  node?: PodNetwork,
): PodTargets {
  const targets: Target[] = [];
  const skipped: Skip[] = [];
  const p: Loose = pod;
  if (!isObject<Loose>(p) || !isObject<Loose>(p.spec)) return { targets, skipped };
  const id = podIdentity(pod);
  const status = p.status;
  if (hasFinished(p)) return { targets, skipped };
  if (p.spec.hostNetwork === true) return { targets, skipped: hostNetworkSkips(p.spec, id) };
  const annotations = isObject<Loose>(p.metadata) && isObject<Loose>(p.metadata.annotations)
    ? p.metadata.annotations
    : {};
  const annotated = podNetwork(annotations, opts);
  let mismatch: NetworkMismatch | undefined;
  if (node && annotated !== null && !sameNetwork(annotated, node)) {
    mismatch = {
      pod: id,
      node: { network: node.network, networkId: node.networkId },
      annotated: typeof annotated === "string"
        ? annotated
        : `${networkLabel(annotated.network)} (id ${annotated.networkId})`,
    };
  }
  const net = node ?? annotated ?? DEFAULT_NETWORK;
  if (typeof net === "string") {
    skipped.push({ pod: id, reason: "annotation", message: net });
    return { targets, skipped };
  }
  // A default-network pod only claims its keys: Lace has nothing to tell its author.
  const onDefault = net === DEFAULT_NETWORK;
  const out = onDefault ? [] : targets;
  const report = onDefault ? [] : skipped;
  const done = (): PodTargets => {
    if (onDefault) return out.length ? { targets, skipped, claims: out } : { targets, skipped };
    return mismatch ? { targets, skipped, mismatch } : { targets, skipped };
  };
  const { addresses, bad, special } = podAddresses(status);
  for (const ip of bad) {
    report.push({ pod: id, reason: "address", message: `Pod IP is not an IP address: ${ip}` });
  }
  for (const message of special) report.push({ pod: id, reason: "special-address", message });
  if (addresses.length === 0) return done();

  // Containers, then sidecars (init containers with restartPolicy Always). Other init
  // containers have neither probes nor lifecycle hooks: the API refuses both there
  // (pkg/apis/core/validation, validateInitContainers: "may not be set for init containers
  // without restartPolicy=Always"), and the kubelet validates static pods the same way
  // (pkg/kubelet/config/common.go, tryDecodeSinglePod: ValidatePodCreate).
  const containers: unknown[] = [
    ...(Array.isArray(p.spec.containers) ? p.spec.containers : []),
    ...(Array.isArray(p.spec.initContainers)
      ? p.spec.initContainers.filter((c: Loose) =>
        isObject<Loose>(c) && c.restartPolicy === "Always"
      )
      : []),
  ];
  const hooks = opts.lifecycleHooks !== false;
  const seen = new Set<string>();
  for (const c of containers) {
    if (!isObject<Loose>(c)) continue;
    const container = str(c.name) ?? "";
    const malformed = (m: MalformedHandler) =>
      report.push({
        pod: id,
        container,
        ...(m.kind ? { probe: m.kind } : {}),
        reason: "malformed",
        message: m.message,
      });
    for (const h of connectingHandlers(c, container, hooks, malformed)) {
      const { kind, handler, action } = h;
      const what = `${kindLabel(kind)} of container "${container}"`;
      const skip = (reason: SkipReason, message: string) =>
        report.push({ pod: id, container, probe: kind, reason, message });
      // gRPC probes take a number only; no name lookup.
      const resolved = handler === "grpc" && typeof action.port !== "number"
        ? {
          reason: "malformed" as const,
          message: `gRPC port must be a number: ${String(action.port)}`,
        }
        : resolvePort(action.port, c);
      if ("reason" in resolved) {
        skip(resolved.reason, `${what}: ${resolved.message}`);
        continue;
      }
      let where = addresses;
      const host = handler === "grpc" ? undefined : action.host;
      if (host !== undefined && host !== null && host !== "") {
        let own: string | undefined;
        try {
          if (typeof host === "string") own = canonicalAddress(host).address;
        } catch { /* a host name: never one of the pod's IPs */ }
        where = addresses.filter((a) => a.address === own);
        if (where.length === 0) {
          skip(
            "host",
            `${what} sets host ${
              JSON.stringify(host)
            }, which is not one of the pod's IPs: the kubelet connects there, so Lace does not redirect it`,
          );
          continue;
        }
      }
      // Every pod IP, hooks too. A probe goes to status.podIP; an httpGet hook without a
      // host goes to the runtime's first sandbox IP (pkg/kubelet/lifecycle/handlers.go,
      // runHTTPHandler: status.IPs[0] of the runtime's pod status), which
      // pkg/kubelet/kuberuntime (determinePodSandboxIPs) lists as the runtime reports them,
      // its primary first, while status.podIPs puts the node's family first
      // (pkg/kubelet/kubelet_pods.go, sortPodIPs): on a dual-stack pod it may be either.
      for (const a of where) {
        const key: ProbeKey = { family: a.family, address: a.address, port: resolved.port };
        const kid = `${key.family}/${key.address}/${key.port}`;
        if (seen.has(kid)) continue;
        seen.add(kid);
        const target: Target = {
          key,
          networkId: net.networkId,
          network: net.network,
          pod: id,
          container,
          probe: kind,
          handler,
        };
        const period = h.periodSeconds;
        if (typeof period === "number" && Number.isInteger(period) && period >= 1) {
          target.periodSeconds = period;
        }
        if (handler === "httpGet") {
          target.http = {
            path: str(action.path) || "/",
            scheme: str(action.scheme) || "HTTP",
          };
        }
        out.push(target);
      }
    }
  }
  return done();
}
