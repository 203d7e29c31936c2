/**
 * The pods the rules' unit tests start from: one ready pod on network blue/7
 * with one httpGet readiness probe, the annotation keys it is read with, and
 * the target that probe gets.
 */
import type { Container, Pod } from "../pods/pod.ts";
import type { Target } from "./targets.ts";

export const OPTS = {
  networkAnnotation: "lace.io/network",
  networkIdAnnotation: "lace.io/network-id",
};

/** The pod "shop/web" (uid u1) at 10.1.0.5, with the fields in `over` changed. */
export function pod(over: {
  containers?: Container[];
  initContainers?: Container[];
  annotations?: Record<string, string> | null;
  ips?: string[];
  podIP?: string;
  phase?: string;
  hostNetwork?: boolean;
  deletionTimestamp?: string;
}): Pod {
  const p: Pod = {
    metadata: {
      name: "web",
      namespace: "shop",
      uid: "u1",
      creationTimestamp: "2026-01-01T00:00:00Z",
      annotations: over.annotations === null
        ? undefined
        : over.annotations ?? { "lace.io/network": "blue", "lace.io/network-id": "7" },
    },
    spec: {
      containers: over.containers ??
        [{ name: "app", readinessProbe: { httpGet: { port: 8080, path: "/ready" } } }],
    },
    status: { phase: over.phase ?? "Running" },
  };
  if (over.initContainers) p.spec.initContainers = over.initContainers;
  if (over.hostNetwork) p.spec.hostNetwork = true;
  if (over.deletionTimestamp) p.metadata.deletionTimestamp = over.deletionTimestamp;
  if (over.podIP) p.status!.podIP = over.podIP;
  const ips = over.ips ?? (over.podIP ? undefined : ["10.1.0.5"]);
  if (ips) p.status!.podIPs = ips.map((ip) => ({ ip }));
  return p;
}

/** The target of `pod({})`'s readiness probe (10.1.0.5:8080 in blue/7), with the fields in `over` changed. */
export function target(over: Partial<Target> = {}): Target {
  return {
    key: { family: "ipv4", address: "10.1.0.5", port: 8080 },
    networkId: 7,
    network: "blue",
    pod: { namespace: "shop", name: "web", uid: "u1", creationTimestamp: "2026-01-01T00:00:00Z" },
    container: "app",
    probe: "readiness",
    handler: "httpGet",
    http: { path: "/ready", scheme: "HTTP" },
    ...over,
  };
}
