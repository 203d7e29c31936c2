/**
 * The rules: which (family, address, port) targets a pod's probes need in the
 * probe map. Pure code over plain data, so every rule is unit-tested and the
 * agent can never crash on a strange pod: anything it cannot use becomes a
 * `Skip` with a reason and a message, never an exception.
 */
import type { Pod } from "../pods/pod.ts";
import { canonicalAddress, type Family, type ProbeKey } from "../datapath/probe_map.ts";
import { specialAddressKind, specialAddressReason } from "./addresses.ts";
import { isObject } from "../json.ts";

export type ProbeKind = "liveness" | "readiness" | "startup";
export type ProbeHandler = "httpGet" | "tcpSocket" | "grpc";

/** Who a target or a problem belongs to: enough to log it and to address an Event. */
export interface PodIdentity {
  namespace: string;
  name: string;
  uid: string;
  creationTimestamp?: string;
}

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
  | "malformed";

/** A probe (or a whole pod) that gets no target, with what an operator should know. */
export interface Skip {
  pod: PodIdentity;
  container?: string;
  probe?: ProbeKind;
  reason: SkipReason;
  message: string;
}

/** A Lace network: its name and its id (1..65535), the id going into the mark. */
export interface PodNetwork {
  network: string;
  networkId: number;
}

/**
 * The pod's annotations name another network than the node attached it to
 * (or a malformed one): the node's network is used, and this is reported.
 */
export interface NetworkMismatch {
  pod: PodIdentity;
  /** The network the node attached the pod to, which its targets get. */
  node: PodNetwork;
  /** What the annotations say, for the report. */
  annotated: string;
}

/**
 * The host-reachable default network of pods without a Lace network: never in
 * a mark, but a network all the same when two pods claim one address.
 */
export const DEFAULT_NETWORK: Readonly<PodNetwork> = { network: "", networkId: 0 };

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

export interface TargetOptions {
  networkAnnotation: string;
  networkIdAnnotation: string;
}

const PROBES: [ProbeKind, "livenessProbe" | "readinessProbe" | "startupProbe"][] = [
  ["liveness", "livenessProbe"],
  ["readiness", "readinessProbe"],
  ["startup", "startupProbe"],
];

// deno-lint-ignore no-explicit-any
type Loose = any;

function str(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

/** The pod's identity; tolerant of missing fields so a skip can always name the pod. */
function podIdentity(pod: Pod): PodIdentity {
  const meta: Loose = isObject<Loose>(pod) && isObject<Loose>(pod.metadata) ? pod.metadata : {};
  const id: PodIdentity = {
    namespace: str(meta.namespace) ?? "default",
    name: str(meta.name) ?? "",
    uid: str(meta.uid) ?? "",
  };
  const created = str(meta.creationTimestamp);
  if (created !== undefined) id.creationTimestamp = created;
  return id;
}

/**
 * Parses the network annotations. Both absent: the pod is on the host-reachable
 * default network (null, not a problem). Lace writes both together, so one
 * without the other, or an id that is not decimal 1..65535, is malformed.
 */
function podNetwork(
  annotations: Record<string, unknown>,
  opts: TargetOptions,
): PodNetwork | null | string {
  const name = annotations[opts.networkAnnotation];
  const id = annotations[opts.networkIdAnnotation];
  if (name === undefined && id === undefined) return null;
  if (typeof id !== "string") {
    return `Annotation ${opts.networkIdAnnotation} is missing or not a string while ${opts.networkAnnotation} is set: the pod's network is unknown`;
  }
  if (typeof name !== "string" || name === "") {
    return `Annotation ${opts.networkAnnotation} is missing or empty while ${opts.networkIdAnnotation} is "${id}": the pod's network is unknown`;
  }
  const networkId = /^[0-9]{1,5}$/.test(id) ? Number(id) : NaN;
  if (!(networkId >= 1 && networkId <= 65535)) {
    return `Annotation ${opts.networkIdAnnotation} must be a decimal number 1..65535: "${id}"`;
  }
  return { network: name, networkId };
}

/**
 * The pod's addresses, canonical and without duplicates; podIP only when podIPs
 * is absent or empty. Loopback, link-local, unspecified, multicast and
 * broadcast addresses are set aside in `special` with the reason: none of them
 * is a pod's own address, whatever a source says.
 */
function podAddresses(
  status: Loose,
): { addresses: ProbeKey[]; bad: string[]; special: string[] } {
  const raw: unknown[] = [];
  if (isObject<Loose>(status)) {
    if (Array.isArray(status.podIPs) && status.podIPs.length > 0) {
      for (const item of status.podIPs) raw.push(isObject<Loose>(item) ? item.ip : item);
    } else if (status.podIP !== undefined && status.podIP !== "") {
      raw.push(status.podIP);
    }
  }
  const addresses: ProbeKey[] = [];
  const bad: string[] = [];
  const special: string[] = [];
  const seen = new Set<string>();
  for (const ip of raw) {
    let canonical: { family: Family; address: string };
    try {
      if (typeof ip !== "string") throw new TypeError("not a string");
      canonical = canonicalAddress(ip);
    } catch {
      bad.push(JSON.stringify(ip) ?? String(ip));
      continue;
    }
    const { family, address } = canonical;
    if (seen.has(address)) continue;
    seen.add(address);
    const kind = specialAddressKind(address);
    if (kind) {
      special.push(
        `Pod IP ${JSON.stringify(ip)} never becomes a probe target: ${
          specialAddressReason(kind, family)
        }`,
      );
      continue;
    }
    addresses.push({ family, address, port: 0 });
  }
  return { addresses, bad, special };
}

/**
 * Resolves a probe port the way the kubelet does (`ResolveContainerPort`): a
 * number is used as is; a string is looked up by name in this container's own
 * `ports` (first match, protocol not considered), and a string that names no
 * port but reads as a number is used as that number.
 */
function resolvePort(
  port: unknown,
  container: Record<string, Loose>,
): { port: number } | { reason: SkipReason; message: string } {
  let value: number;
  if (typeof port === "number") {
    value = port;
  } else if (typeof port === "string" && port !== "") {
    const ports: unknown[] = Array.isArray(container.ports) ? container.ports : [];
    const named = ports.find((p) => isObject<Loose>(p) && p.name === port) as Loose;
    if (named) {
      value = named.containerPort;
    } else if (/^[0-9]+$/.test(port)) {
      value = Number(port);
    } else {
      return {
        reason: "named-port",
        message: `Port name "${port}" matches no port of container "${str(container.name) ?? ""}"`,
      };
    }
  } else {
    return { reason: "malformed", message: `Probe port is missing or invalid: ${String(port)}` };
  }
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1 || value > 65535) {
    const shown = typeof port === "number" ? "" : ` (${JSON.stringify(port)})`;
    return { reason: "port-range", message: `Probe port ${value}${shown} is outside 1..65535` };
  }
  return { port: value };
}

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

function sameNetwork(a: PodNetwork | string, b: PodNetwork): boolean {
  return typeof a !== "string" && a.networkId === b.networkId && a.network === b.network;
}

/** Where a live pod sits on this node: its network (undefined when unknown) and its addresses. */
export interface PodPlacement {
  pod: PodIdentity;
  network: PodNetwork | undefined;
  addresses: ProbeKey[];
}

/**
 * The network and the addresses of a pod that holds them on this node now,
 * or undefined for a pod that holds none: on the host network, or finished
 * (Succeeded/Failed). The network is `node` when the node attached the pod,
 * else the annotations', else DEFAULT_NETWORK; undefined when the annotations
 * are malformed. Addresses as in probeTargetsForPod (ports are 0).
 */
export function podPlacement(
  pod: Pod,
  opts: TargetOptions,
  node?: PodNetwork,
): PodPlacement | undefined {
  const p: Loose = pod;
  if (!isObject<Loose>(p) || !isObject<Loose>(p.spec)) return undefined;
  const status = p.status;
  const phase = isObject<Loose>(status) ? status.phase : undefined;
  if (p.spec.hostNetwork === true || phase === "Succeeded" || phase === "Failed") return undefined;
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
