/**
 * The demo's pods: one per simulated network, all at the same IPv4 and IPv6
 * address, each with an HTTP liveness probe on a named port and a TCP
 * readiness probe, created a minute apart (the first is the oldest: it holds
 * the address under the default policy). Ports differ per network because two
 * networks cannot both own the same (address, port) on one node (the
 * conflict rule), which the demo's run with sharing relies on.
 */
import { POD_IPV4, POD_IPV6, type SimNetwork } from "./netns.ts";

export interface DemoProbe {
  probe: "liveness" | "readiness";
  kind: "httpGet" | "tcpSocket";
  port: number;
  path?: string;
}

export interface DemoPod {
  name: string;
  network: string;
  networkId: number;
  probes: DemoProbe[];
  manifest: Record<string, unknown>;
}

/** Builds the demo's Pod objects, as the API server would return them (with status). */
export function demoPods(networks: SimNetwork[], nodeName = "demo-node"): DemoPod[] {
  return networks.map((net, i) => {
    const name = `web-net${net.id}`;
    const network = `net${net.id}`;
    const httpPort = 8080 + net.id;
    const tcpPort = 9000 + net.id;
    const probes: DemoProbe[] = [
      { probe: "liveness", kind: "httpGet", port: httpPort, path: "/healthz" },
      { probe: "readiness", kind: "tcpSocket", port: tcpPort },
    ];
    const manifest = {
      apiVersion: "v1",
      kind: "Pod",
      metadata: {
        name,
        namespace: "demo",
        uid: `00000000-0000-4000-8000-${String(net.id).padStart(12, "0")}`,
        creationTimestamp: new Date(Date.UTC(2026, 0, 1, 0, i)).toISOString(),
        annotations: { "lace.io/network": network, "lace.io/network-id": String(net.id) },
      },
      spec: {
        nodeName,
        containers: [{
          name: "web",
          image: "registry.example/web:1",
          ports: [{ name: "http", containerPort: httpPort }, { containerPort: tcpPort }],
          livenessProbe: { httpGet: { path: "/healthz", port: "http" } },
          readinessProbe: { tcpSocket: { port: tcpPort } },
        }],
      },
      status: {
        phase: "Running",
        podIP: POD_IPV4,
        podIPs: [{ ip: POD_IPV4 }, { ip: POD_IPV6 }],
      },
    };
    return { name, network, networkId: net.id, probes, manifest };
  });
}
