/**
 * The rules: which (family, address, port) targets a pod's probes need in the
 * probe map. Pure code over plain data, so every rule is unit-tested and the
 * agent can never crash on a strange pod: anything it cannot use becomes a
 * `Skip` with a reason and a message, never an exception.
 */
import type { Pod } from "../pods/pod.ts";
import { canonicalAddress, type ProbeKey } from "../datapath/probe_map.ts";
import { isObject } from "../json.ts";
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

export type ProbeKind = "liveness" | "readiness" | "startup";
export type ProbeHandler = "httpGet" | "tcpSocket" | "grpc";

/** One key the kubelet will connect to, and why. */
export interface Target {
  key: ProbeKey;
  networkId: number;
  network: string;
  pod: PodIdentity;
  /** The first container and probe (in spec order) that needs this key. */
  container: string;
  probe: ProbeKind;
  handler: ProbeHandler;
  http?: { path: string; scheme: string };
  /** The probe's periodSeconds when the spec sets one (the kubelet's default is 10). */
  periodSeconds?: number;
}

export type SkipReason =
  | "host"
  | "named-port"
  | "port-range"
  | "annotation"
  | "address"
  | "special-address"
  | "malformed"
  | "too-large";

/** A probe (or a whole pod) that gets no target, with what an operator should know. */
export interface Skip {
  pod: PodIdentity;
  container?: string;
  probe?: ProbeKind;
  reason: SkipReason;
  message: string;
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

const PROBES: [ProbeKind, "livenessProbe" | "readinessProbe" | "startupProbe"][] = [
  ["liveness", "livenessProbe"],
  ["readiness", "readinessProbe"],
  ["startup", "startupProbe"],
];

/**
 * Computes a pod's probe targets and the probes it had to skip. The pod's
 * network is `node`, the network the node attached it to (the chained CNI
 * plugin's ADD), whenever that is known: annotations, which the pod's author
 * can write, then only count for a report when they disagree (`mismatch`).
 * Without `node` the annotations decide. A pod gets
 * targets only when it has a Lace network, an address, is not
 * on the host network and has not finished (phase Succeeded/Failed). A pod with
 * a deletionTimestamp keeps its targets: it is still in graceful termination and
 * the kubelet keeps probing it until its containers stop, so it loses them when
 * it leaves the sources (deleted) or reaches a final phase. A probe `host`
 * other than one of the pod's own IPs gets no target: the kubelet would connect
 * elsewhere, and marking that connection into the pod's overlay would let a
 * pod steer the kubelet at another tenant (server-side request forgery).
 * Each key appears once: the first container/probe in spec order describes it.
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
  const phase = isObject<Loose>(status) ? status.phase : undefined;
  if (p.spec.hostNetwork === true || phase === "Succeeded" || phase === "Failed") {
    return { targets, skipped };
  }
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
        : `network "${annotated.network}" (id ${annotated.networkId})`,
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

  const containers: unknown[] = [
    ...(Array.isArray(p.spec.containers) ? p.spec.containers : []),
    ...(Array.isArray(p.spec.initContainers)
      ? p.spec.initContainers.filter((c: Loose) =>
        isObject<Loose>(c) && c.restartPolicy === "Always"
      )
      : []),
  ];
  const seen = new Set<string>();
  for (const c of containers) {
    if (!isObject<Loose>(c)) continue;
    const container = str(c.name) ?? "";
    for (const [kind, field] of PROBES) {
      const probe = c[field];
      if (probe === undefined || probe === null) continue;
      const skip = (reason: SkipReason, message: string) =>
        report.push({ pod: id, container, probe: kind, reason, message });
      if (!isObject<Loose>(probe)) {
        skip("malformed", `${field} of container "${container}" is not an object`);
        continue;
      }
      // The kubelet checks handlers in this order and uses the first one set.
      if (probe.exec !== undefined && probe.exec !== null) continue;
      const handler: ProbeHandler | undefined = isObject<Loose>(probe.httpGet)
        ? "httpGet"
        : isObject<Loose>(probe.tcpSocket)
        ? "tcpSocket"
        : isObject<Loose>(probe.grpc)
        ? "grpc"
        : undefined;
      if (!handler) continue;
      const action = probe[handler];
      // gRPC probes take a number only; no name lookup.
      const resolved = handler === "grpc" && typeof action.port !== "number"
        ? {
          reason: "malformed" as const,
          message: `gRPC port must be a number: ${String(action.port)}`,
        }
        : resolvePort(action.port, c);
      if ("reason" in resolved) {
        skip(resolved.reason, `${kind} probe of container "${container}": ${resolved.message}`);
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
            `${kind} probe of container "${container}" sets host ${
              JSON.stringify(host)
            }, which is not one of the pod's IPs: the kubelet connects there, so Lace does not redirect it`,
          );
          continue;
        }
      }
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
        const period = probe.periodSeconds;
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
