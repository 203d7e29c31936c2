/**
 * The agent's view of a Pod: plain JSON, the subset of core/v1 Pod that Lace
 * reads. Every source normalises what it gets into this shape, because
 * client-node's informer mixes class instances (Date fields) with plain watch
 * JSON (string timestamps).
 */

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

/**
 * Turns anything a source produced into a plain-JSON Pod, or throws TypeError
 * saying which required field is missing. Dates become RFC 3339 strings, so
 * pods from a list and from a watch compare equal.
 */
export function normalisePod(input: unknown): Pod {
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
  return pod as Pod;
}
