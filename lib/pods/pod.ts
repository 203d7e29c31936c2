/**
 * The agent's view of a Pod: plain JSON, the subset of core/v1 Pod that Lace
 * reads. Every source normalises what it gets into this shape, because
 * client-node's informer mixes class instances (Date fields) with plain watch
 * JSON (string timestamps).
 */
import { nestedDeeperThan } from "../json.ts";

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

export interface Container {
  name: string;
  ports?: ContainerPort[];
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  startupProbe?: Probe;
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
export function podRef(pod: Pod): string {
  return `${pod.metadata.namespace}/${pod.metadata.name}`;
}

/** Pods normalisePod made: frozen, so they can be shared by every holder without a copy. */
const NORMALISED = new WeakSet<object>();
/** Normalised pods whose source nested deeper than MAX_POD_DEPTH: see normalisePod. */
const TOO_DEEP = new WeakSet<object>();

/**
 * How deep a pod's JSON may nest and still be evaluated: far beyond any real
 * pod (a few tens of levels), well below where a recursive copy of it would
 * overflow the stack (kube-apiserver accepts 10,000).
 */
export const MAX_POD_DEPTH = 1000;

/**
 * Throws TypeError for a pod normalisePod marked as nested too deeply. Such a
 * pod stays known by its identity, so it can be reported, but gets no targets.
 */
export function assertNotTooDeep(pod: Pod): void {
  if (TOO_DEEP.has(pod)) {
    throw new TypeError(`Pod is nested more than ${MAX_POD_DEPTH} levels deep`);
  }
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
  "ports",
  "livenessProbe",
  "readinessProbe",
  "startupProbe",
  "restartPolicy",
];
const STATUS_FIELDS = ["phase", "podIP", "podIPs"];

type Json = Record<string, unknown>;

function isRecord(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** `value` with only `fields` when it is an object; anything else as it is (the rules judge it). */
function pick(value: unknown, fields: readonly string[]): unknown {
  if (!isRecord(value)) return value;
  const out: Json = {};
  for (const f of fields) if (Object.hasOwn(value, f)) out[f] = value[f];
  return out;
}

function containers(list: unknown): unknown {
  return Array.isArray(list) ? list.map((c) => pick(c, CONTAINER_FIELDS)) : list;
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

/**
 * Turns anything a source produced into a plain-JSON Pod, or throws TypeError
 * saying which required field is missing. Dates become RFC 3339 strings, so
 * pods from a list and from a watch compare equal. Only the fields of the Pod
 * interface are kept (a real pod's managed fields, env, volumes and container
 * statuses are most of its size, and a node holds one copy per pod for as long
 * as the pod lives); their values are kept as they are, for the rules to check.
 * The result is frozen and handed back as it is when normalised again, so a
 * source and the cache share one copy. A pod nested deeper than MAX_POD_DEPTH
 * (in any field, kept or not) is marked for assertNotTooDeep.
 */
export function normalisePod(input: unknown): Pod {
  if (typeof input === "object" && input !== null && NORMALISED.has(input)) return input as Pod;
  const pod = JSON.parse(JSON.stringify(input ?? null));
  if (!pod || typeof pod !== "object") throw new TypeError("Pod is not an object");
  const meta = pod.metadata;
  if (!meta || typeof meta !== "object") throw new TypeError("Pod has no metadata");
  for (const field of ["name", "uid"] as const) {
    if (typeof meta[field] !== "string" || meta[field] === "") {
      throw new TypeError(`Pod has no metadata.${field}`);
    }
  }
  if (meta.namespace === undefined || meta.namespace === "") meta.namespace = "default";
  if (typeof meta.namespace !== "string") {
    throw new TypeError("Pod metadata.namespace is not a string");
  }
  if (!pod.spec || typeof pod.spec !== "object") {
    throw new TypeError(`Pod "${meta.name}" has no spec`);
  }
  if (!Array.isArray(pod.spec.containers)) {
    throw new TypeError(`Pod "${meta.name}" has no spec.containers list`);
  }
  const spec = pick(pod.spec, SPEC_FIELDS) as Json;
  spec.containers = containers(spec.containers);
  if (Object.hasOwn(spec, "initContainers")) spec.initContainers = containers(spec.initContainers);
  const out: Json = { metadata: pick(meta, METADATA_FIELDS), spec };
  if (Object.hasOwn(pod, "status")) out.status = pick(pod.status, STATUS_FIELDS);
  deepFreeze(out);
  NORMALISED.add(out);
  if (nestedDeeperThan(pod, MAX_POD_DEPTH)) TOO_DEEP.add(out);
  return out as unknown as Pod;
}
