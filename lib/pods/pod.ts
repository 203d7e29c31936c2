/**
 * The agent's view of a Pod: plain JSON, the subset of core/v1 Pod that Lace
 * reads. Every source normalises what it gets into this shape, because
 * client-node's informer mixes class instances (Date fields) with plain watch
 * JSON (string timestamps).
 */
import { isObject, nestedDeeperThan } from "../text/json.ts";
import { refusedSkeleton } from "./skeleton.ts";

export interface ContainerPort {
  name?: string;
  containerPort: number;
  protocol?: string;
}

export interface Probe {
  httpGet?: { host?: string; port: number | string; path?: string; scheme?: string };
  tcpSocket?: { host?: string; port: number | string };
  grpc?: { port: number; service?: string };
  exec?: { command?: string[] };
  /** How often the kubelet runs the probe, in seconds (default 10). */
  periodSeconds?: number;
}

/** A lifecycle hook: only httpGet makes the kubelet connect (exec, sleep and tcpSocket do not). */
export interface LifecycleHandler {
  httpGet?: { host?: string; port: number | string; path?: string; scheme?: string };
  tcpSocket?: { host?: string; port: number | string };
  exec?: { command?: string[] };
  sleep?: { seconds: number };
}

export interface Container {
  name: string;
  ports?: ContainerPort[];
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  startupProbe?: Probe;
  lifecycle?: { postStart?: LifecycleHandler; preStop?: LifecycleHandler };
  restartPolicy?: string;
}

export interface Pod {
  metadata: {
    name: string;
    namespace: string;
    uid: string;
    creationTimestamp?: string;
    deletionTimestamp?: string;
    resourceVersion?: string;
    annotations?: Record<string, string>;
  };
  spec: {
    nodeName?: string;
    hostNetwork?: boolean;
    containers: Container[];
    initContainers?: Container[];
  };
  status?: {
    phase?: string;
    podIP?: string;
    podIPs?: { ip: string }[];
  };
}

/** "namespace/name", the way operators name a pod. */
/**
 * Whether the object's phase is final (Succeeded, Failed): the pod never
 * runs again, holds no address and is never probed. Tolerant of any shape:
 * the API source asks it of objects before they are trimmed.
 */
export function hasFinished(object: unknown): boolean {
  const status = (object as { status?: { phase?: unknown } } | null)?.status;
  const phase = status !== null && typeof status === "object" ? status.phase : undefined;
  return phase === "Succeeded" || phase === "Failed";
}

export function podRef(pod: Pod): string {
  return `${pod.metadata.namespace}/${pod.metadata.name}`;
}

/** Pods normalisePod made: frozen, so they can be shared by every holder without a copy. */
const NORMALISED = new WeakSet<object>();
/** Normalised pods that get no targets, with the reason: see assertUsable. */
const REFUSED = new WeakMap<object, PodRefusedError>();

/**
 * How deep a pod's JSON may nest and still be evaluated: far beyond any real
 * pod (a few tens of levels), well below where a recursive copy of it would
 * overflow the stack (kube-apiserver accepts 10,000).
 */
export const MAX_POD_DEPTH = 1000;

/**
 * The largest a pod's Lace fields may be (their JSON, after normalisePod's
 * trim) for the API source to keep them: 16 KiB. A real pod's Lace fields
 * take a few hundred bytes per container with probes (fifty such containers
 * fit), while the API server accepts a pod object of up to 1.5 MB, and the
 * trim alone keeps what a hostile pod makes big inside them (containers,
 * probes, paths). A tenant may bind any number of pods to a node: bench
 * figure 9's goal is at most 64 KiB of heap for one kept at the cap, so that
 * 1000 of them stay within a quarter of the chart's 256 MiB limit.
 */
export const MAX_POD_BYTES = 16 * 1024;

/** Why a pod known to the agent gets no targets: its objects were refused. */
export class PodRefusedError extends TypeError {
  /** `too-large`: over the size cap; `malformed`: nested too deeply. */
  readonly reason: "too-large" | "malformed";
  constructor(reason: "too-large" | "malformed", message: string) {
    super(message);
    this.name = "PodRefusedError";
    this.reason = reason;
  }
}

/**
 * Throws the PodRefusedError of a pod normalisePod refused (nested too deeply,
 * or over its size cap). Such a pod stays known, so it can be reported and
 * still holds its addresses (PodCache.holderView), but gets no targets.
 */
export function assertUsable(pod: Pod): void {
  const refused = REFUSED.get(pod);
  if (refused) throw refused;
}

/** What normalisePod keeps beyond the Pod interface's fields, and how much. */
export interface NormaliseOptions {
  /**
   * The only annotations kept (Lace's network annotations); every one when unset. The API
   * server lets a pod carry 256 KiB of annotations, which Lace never reads.
   */
  annotations?: readonly string[];
  /**
   * The largest JSON the kept fields may make, in UTF-16 code units (bytes for ASCII): a pod
   * over it is kept as a skeleton (skeleton.ts) and refused (assertUsable). No cap when unset.
   */
  maxBytes?: number;
}

/** The fields of each level Lace reads (the Pod interface above); the rest is dropped. */
const METADATA_FIELDS = [
  "name",
  "namespace",
  "uid",
  "creationTimestamp",
  "deletionTimestamp",
  "resourceVersion",
  "annotations",
];
const SPEC_FIELDS = ["nodeName", "hostNetwork", "containers", "initContainers"];
const CONTAINER_FIELDS = [
  "name",
  "livenessProbe",
  "readinessProbe",
  "startupProbe",
  "lifecycle",
  "restartPolicy",
];
const PROBE_KINDS = ["livenessProbe", "readinessProbe", "startupProbe"];
const HOOK_KINDS = ["postStart", "preStop"];
const PROBE_FIELDS = ["httpGet", "tcpSocket", "grpc", "periodSeconds"];
const HANDLER_FIELDS: Record<string, readonly string[]> = {
  httpGet: ["host", "port", "path", "scheme"],
  tcpSocket: ["host", "port"],
  grpc: ["port", "service"],
};
const STATUS_FIELDS = ["phase", "podIP", "podIPs"];

type Json = Record<string, unknown>;

/** `value` with only `fields` when it is an object; anything else as it is (the rules judge it). */
function pick(value: unknown, fields: readonly string[]): unknown {
  if (!isObject(value)) return value;
  const out: Json = {};
  for (const f of fields) if (Object.hasOwn(value, f)) out[f] = value[f];
  return out;
}

/**
 * A probe with only what the rules read: its handlers' address fields (no HTTP headers), its
 * period, and whether it runs a command (`exec: {}`: the command itself never matters).
 */
function probe(value: unknown): unknown {
  if (!isObject(value)) return value;
  const out = pick(value, PROBE_FIELDS) as Json;
  for (const [handler, fields] of Object.entries(HANDLER_FIELDS)) {
    if (Object.hasOwn(out, handler)) out[handler] = pick(out[handler], fields);
  }
  if (value.exec !== undefined && value.exec !== null) out.exec = {};
  else if (Object.hasOwn(value, "exec")) out.exec = value.exec;
  return out;
}

/**
 * A container's lifecycle with only its postStart and preStop hooks, each kept as a probe is
 * (its handlers' address fields, and of exec only that it is set; a sleep makes no connection).
 */
function lifecycle(value: unknown): unknown {
  if (!isObject(value)) return value;
  const out = pick(value, HOOK_KINDS) as Json;
  for (const kind of HOOK_KINDS) if (Object.hasOwn(out, kind)) out[kind] = probe(out[kind]);
  return out;
}

/**
 * A container with its probes and lifecycle hooks and, of its ports, the first one of each
 * name a probe or hook names (how the kubelet resolves a named port): the only ports the
 * rules look up.
 */
function container(value: unknown): unknown {
  if (!isObject(value)) return value;
  const out = pick(value, CONTAINER_FIELDS) as Json;
  const names = new Set<string>();
  const handlers: unknown[] = [];
  for (const kind of PROBE_KINDS) {
    if (!Object.hasOwn(out, kind)) continue;
    out[kind] = probe(out[kind]);
    handlers.push(out[kind]);
  }
  if (Object.hasOwn(out, "lifecycle")) {
    out.lifecycle = lifecycle(out.lifecycle);
    if (isObject(out.lifecycle)) {
      for (const kind of HOOK_KINDS) handlers.push(out.lifecycle[kind]);
    }
  }
  for (const p of handlers) {
    if (!isObject(p)) continue;
    for (const handler of ["httpGet", "tcpSocket"]) {
      const port = isObject(p[handler]) ? (p[handler] as Json).port : undefined;
      if (typeof port === "string") names.add(port);
    }
  }
  if (names.size > 0 && Array.isArray(value.ports)) {
    const ports: Json[] = [];
    for (const port of value.ports) {
      if (!isObject(port) || typeof port.name !== "string" || !names.has(port.name)) continue;
      names.delete(port.name);
      ports.push(pick(port, ["name", "containerPort"]) as Json);
    }
    if (ports.length > 0) out.ports = ports;
  }
  return out;
}

function containers(list: unknown): unknown {
  return Array.isArray(list) ? list.map(container) : list;
}

function annotations(value: unknown, keys: readonly string[] | undefined): unknown {
  if (keys === undefined || !isObject(value)) return value;
  const out: Json = {};
  for (const k of keys) if (Object.hasOwn(value, k)) out[k] = value[k];
  return out;
}

/** Freezes a JSON value and everything in it, without recursion (a pod may nest deeply). */
function deepFreeze(root: object): void {
  const stack: object[] = [root];
  while (stack.length) {
    const o = stack.pop()!;
    Object.freeze(o);
    for (const v of Object.values(o)) if (typeof v === "object" && v !== null) stack.push(v);
  }
}

function frozen(out: Json, refused?: PodRefusedError): Pod {
  deepFreeze(out);
  NORMALISED.add(out);
  if (refused) REFUSED.set(out, refused);
  return out as unknown as Pod;
}

/**
 * Turns anything a source produced into a plain-JSON Pod, or throws TypeError
 * saying which required field is missing. Dates become RFC 3339 strings, so
 * pods from a list and from a watch compare equal. Only what the rules read is
 * kept (a real pod's managed fields, env, volumes and container statuses are
 * most of its size, and a node holds one copy per pod for as long as the pod
 * lives): the fields of the Pod interface, of a container's ports only those a
 * probe names, of a probe only its handler's address (`exec: {}` for a
 * command), and of the annotations only `options.annotations`. Values are kept
 * as they are, for the rules to check. Only the kept fields are copied, never
 * the whole input. The result is frozen and handed back as it is when
 * normalised again, so a source and the cache share one copy.
 *
 * Refused, kept as a bounded skeleton (who it is and where it sits: refusedSkeleton) with no
 * containers, and marked for assertUsable: a pod whose kept fields are over `options.maxBytes`. Marked
 * too: a pod nested deeper than MAX_POD_DEPTH (in any field, kept or not).
 */
export function normalisePod(input: unknown, options: NormaliseOptions = {}): Pod {
  if (typeof input === "object" && input !== null && NORMALISED.has(input)) return input as Pod;
  if (!isObject(input)) throw new TypeError("Pod is not an object");
  const meta = input.metadata;
  if (!isObject(meta)) throw new TypeError("Pod has no metadata");
  for (const field of ["name", "uid"] as const) {
    if (typeof meta[field] !== "string" || meta[field] === "") {
      throw new TypeError(`Pod has no metadata.${field}`);
    }
  }
  const namespace = meta.namespace === undefined || meta.namespace === ""
    ? "default"
    : meta.namespace;
  if (typeof namespace !== "string") throw new TypeError("Pod metadata.namespace is not a string");
  if (!isObject(input.spec)) throw new TypeError(`Pod "${meta.name}" has no spec`);
  if (!Array.isArray(input.spec.containers)) {
    throw new TypeError(`Pod "${meta.name}" has no spec.containers list`);
  }
  const kept: Json = {};
  for (const f of METADATA_FIELDS) {
    if (f === "namespace") kept.namespace = namespace;
    else if (f === "annotations" && Object.hasOwn(meta, f)) {
      kept.annotations = annotations(meta.annotations, options.annotations);
    } else if (Object.hasOwn(meta, f)) kept[f] = meta[f];
  }
  const spec = pick(input.spec, SPEC_FIELDS) as Json;
  spec.containers = containers(spec.containers);
  if (Object.hasOwn(spec, "initContainers")) spec.initContainers = containers(spec.initContainers);
  const picked: Json = { metadata: kept, spec };
  if (Object.hasOwn(input, "status")) picked.status = pick(input.status, STATUS_FIELDS);
  // One JSON round trip of the kept fields only: Dates become strings, class instances plain.
  const json = JSON.stringify(picked);
  if (options.maxBytes !== undefined && json.length > options.maxBytes) {
    return frozen(
      refusedSkeleton(input, namespace, options.annotations),
      new PodRefusedError(
        "too-large",
        `Pod's probe-related fields take ${json.length} bytes, over the cap of ${options.maxBytes}: ` +
          "it gets no probe targets (its addresses stay held on the node); keep a pod's probes, " +
          "ports and Lace annotations smaller",
      ),
    );
  }
  const refused = nestedDeeperThan(input, MAX_POD_DEPTH)
    ? new PodRefusedError("malformed", `Pod is nested more than ${MAX_POD_DEPTH} levels deep`)
    : undefined;
  return frozen(JSON.parse(json), refused);
}
