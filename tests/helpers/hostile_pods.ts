/**
 * Pods as a hostile tenant makes them to run a node agent out of memory:
 * bound to a node by `spec.nodeName`, which any tenant
 * may set, and as large as the API server accepts (its etcd request limit,
 * 1.5 MB), never scheduled by a kubelet (phase Pending, no address). Shared by
 * the attacker test (tests/agent_memory_test.ts) and the bench's pod memory
 * figure.
 */
import { MAX_POD_BYTES, normalisePod } from "../../lib/pods/pod.ts";

/** The size of one hostile pod's JSON, about the API server's largest object. */
export const HOSTILE_POD_BYTES = 1_500_000;

/** What a hostile pod makes big. */
export type HostileKind =
  /**
   * What the API server lets a pod carry and Lace never reads: 250 KB of annotations (under the
   * API server's 256 KiB), 4000 container ports, and env values for the rest.
   */
  | "bulk"
  /** Fields Lace reads: 1.5 MB of containers, each with a probe on a long path. */
  | "probes"
  /**
   * The most Lace keeps of one pod: containers with three tcpSocket probes each (many small
   * objects, the most heap per byte), as many as stay under MAX_POD_BYTES once trimmed.
   */
  | "at-cap";

function annotations(networkId: number, extra: Record<string, string> = {}) {
  return {
    "lace.io/network": `net${networkId}`,
    "lace.io/network-id": String(networkId),
    ...extra,
  };
}

/** Hostile pod number `i` of `kind`, in namespace `namespace`, bound to `node`. */
export function hostilePod(
  i: number,
  kind: HostileKind,
  node: string,
  namespace = "tenant",
): Record<string, unknown> {
  const metadata = {
    name: `hostile-${kind}-${i}`,
    namespace,
    uid: `hostile-${kind}-${i}`,
    annotations: annotations(
      1,
      kind === "bulk" ? { "tenant.example/blob": "a".repeat(250_000) } : {},
    ),
  };
  let containers: Record<string, unknown>[];
  if (kind === "bulk") {
    const ports = Array.from({ length: 4000 }, (_, k) => ({
      name: `p${k}`,
      containerPort: 1 + (k % 65535),
      protocol: "TCP",
    }));
    const container: Record<string, unknown> = {
      name: "app",
      image: "registry.example/app:1",
      ports,
      livenessProbe: { httpGet: { path: "/healthz", port: "p1" } },
      env: [] as { name: string; value: string }[],
    };
    const sized = () =>
      JSON.stringify({ metadata, spec: { nodeName: node, containers: [container] } });
    const env = container.env as { name: string; value: string }[];
    const room = HOSTILE_POD_BYTES - sized().length;
    const chunk = 100_000;
    for (let k = 0; k * chunk < room; k++) {
      env.push({ name: `E${k}`, value: "x".repeat(Math.min(chunk, room - k * chunk - 30)) });
    }
    containers = [container];
  } else if (kind === "at-cap") {
    const probe = (port: number) => ({ tcpSocket: { port } });
    const one = (k: number) => ({
      name: `c${k}`,
      image: "i",
      livenessProbe: probe(8080),
      readinessProbe: probe(8081),
      startupProbe: probe(8082),
    });
    const kept = (n: number) =>
      JSON.stringify(normalisePod(pod(metadata, node, containersOf(n)))).length;
    const containersOf = (n: number) => Array.from({ length: n }, (_, k) => one(k));
    let n = 1;
    while (kept(n * 2) <= MAX_POD_BYTES) n *= 2;
    for (let step = n / 2; step >= 1; step /= 2) if (kept(n + step) <= MAX_POD_BYTES) n += step;
    containers = containersOf(n);
  } else {
    const one = (k: number) => ({
      name: `c${k}`,
      image: "i",
      livenessProbe: { httpGet: { path: `/${"p".repeat(600)}`, port: 8080 } },
    });
    const perContainer = JSON.stringify(one(1000)).length + 1;
    containers = Array.from(
      { length: Math.floor(HOSTILE_POD_BYTES / perContainer) },
      (_, k) => one(k),
    );
  }
  return pod(metadata, node, containers);
}

function pod(metadata: unknown, node: string, containers: unknown[]): Record<string, unknown> {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata,
    spec: { nodeName: node, containers },
    status: { phase: "Pending" },
  };
}

/**
 * A pod as real workloads have it, for comparison: one container with three probes, a few
 * ports, env, volume mounts, labels, an owner, managed fields and a status, about 3 KB of JSON.
 */
export function realisticPod(
  i: number,
  node: string,
  namespace = "tenant",
): Record<string, unknown> {
  const ip = `10.${100 + ((i >> 16) & 127)}.${(i >> 8) & 255}.${i & 255}`;
  const name = `web-7d9f8c6b5-${i.toString(36).padStart(5, "0")}`;
  const fieldsV1 = {
    "f:metadata": { "f:labels": { "f:app": {} } },
    "f:spec": { "f:containers": {} },
  };
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name,
      namespace,
      uid: `00000000-0000-4000-8000-${i.toString(16).padStart(12, "0")}`,
      creationTimestamp: "2026-01-01T00:00:00Z",
      labels: { app: "web", "pod-template-hash": "7d9f8c6b5" },
      annotations: annotations(1, { "kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z" }),
      ownerReferences: [{
        apiVersion: "apps/v1",
        kind: "ReplicaSet",
        name: "web-7d9f8c6b5",
        uid: "11111111-1111-4111-8111-111111111111",
        controller: true,
        blockOwnerDeletion: true,
      }],
      managedFields: [
        { manager: "kube-controller-manager", operation: "Update", apiVersion: "v1", fieldsV1 },
        {
          manager: "kubelet",
          operation: "Update",
          apiVersion: "v1",
          subresource: "status",
          fieldsV1,
        },
      ],
    },
    spec: {
      nodeName: node,
      serviceAccountName: "web",
      volumes: [
        { name: "config", configMap: { name: "web-config" } },
        {
          name: "kube-api-access",
          projected: { sources: [{ serviceAccountToken: { path: "token" } }] },
        },
      ],
      containers: [{
        name: "web",
        image: "registry.example/web:1.2.3",
        args: ["--listen=:8080", "--metrics=:9090"],
        ports: [
          { name: "http", containerPort: 8080, protocol: "TCP" },
          { name: "metrics", containerPort: 9090, protocol: "TCP" },
        ],
        env: Array.from({ length: 12 }, (_, k) => ({ name: `SETTING_${k}`, value: `value-${k}` })),
        resources: { requests: { cpu: "100m", memory: "128Mi" }, limits: { memory: "256Mi" } },
        volumeMounts: [
          { name: "config", mountPath: "/etc/web" },
          { name: "kube-api-access", mountPath: "/var/run/secrets/kubernetes.io/serviceaccount" },
        ],
        livenessProbe: { httpGet: { path: "/healthz", port: "http" }, periodSeconds: 10 },
        readinessProbe: { httpGet: { path: "/ready", port: "http" }, periodSeconds: 5 },
        startupProbe: { tcpSocket: { port: 8080 }, failureThreshold: 30 },
      }],
    },
    status: {
      phase: "Running",
      podIP: ip,
      podIPs: [{ ip }],
      hostIP: "192.0.2.10",
      startTime: "2026-01-01T00:00:01Z",
      qosClass: "Burstable",
      conditions: ["Initialized", "Ready", "ContainersReady", "PodScheduled"].map((type) => ({
        type,
        status: "True",
        lastTransitionTime: "2026-01-01T00:00:05Z",
      })),
      containerStatuses: [{
        name: "web",
        ready: true,
        started: true,
        restartCount: 0,
        image: "registry.example/web:1.2.3",
        imageID: `registry.example/web@sha256:${"0".repeat(64)}`,
        containerID: `containerd://${"1".repeat(64)}`,
        state: { running: { startedAt: "2026-01-01T00:00:02Z" } },
      }],
    },
  };
}
