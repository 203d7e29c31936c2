/**
 * The test pods of the real node: agnhost servers in one of the node's networks, probed by the
 * kubelet with every kind of probe Lace tags: httpGet on a named port, tcpSocket, grpc, and a
 * sidecar's startup probe, with liveness on all. The HTTP probes ask for a path that names the
 * pod (`/echo?msg=<pod>`), which agnhost logs, so a test can tell which pod answered each probe.
 * Each pod also listens on the probe ports of the pods of the other networks (a `decoy`
 * container, the tenant server, which logs every connection): a probe delivered to the wrong
 * pod would be answered and logged there, not refused.
 */
import type { V1Pod } from "@kubernetes/client-node";
import { IMAGES } from "./images.ts";

export const PROBE_NAMESPACE = "probes";

export interface ProbePodOptions {
  name: string;
  node: string;
  network: string;
  /**
   * Added to every port. Pods that share an address need distinct ports: the kubelet's
   * connection carries only (address, port), so that pair names one pod on the node.
   */
  portOffset: number;
  /**
   * "ipv6": the network plugin gives the pod an IPv6 address only, so status.podIP, which the
   * kubelet probes, is IPv6 on this IPv4-primary node (a dual-stack pod's would be IPv4).
   */
  family?: "ipv6";
}

/** The pod label the test network plugin reads for ProbePodOptions.family. */
export const FAMILY_LABEL = "lace-test.io/family";

/** The port offsets of the networks' probe pods: network i uses 100 * i. */
export const PORT_OFFSETS = [0, 100, 200];

/** The ports a pod probes at `portOffset`: HTTP, sidecar HTTP, gRPC. */
export function probedPorts(portOffset: number): number[] {
  return [8080, 8082, 5000].map((port) => port + portOffset);
}

/** The message in every HTTP probe path of this pod, as agnhost logs it. */
export function probeMessage(pod: string, container: string): string {
  return `probe-${pod}-${container}`;
}

/** A pod whose containers pass their probes only if the kubelet reaches this very pod. */
export function probePod(o: ProbePodOptions): V1Pod {
  const http = 8080 + o.portOffset, side = 8082 + o.portOffset, grpc = 5000 + o.portOffset;
  // Two seconds for agnhost to listen after its container starts: a probe before that is
  // refused (by the right pod), which the kubelet reports as Unhealthy like any failure.
  const often = { initialDelaySeconds: 2, periodSeconds: 1, timeoutSeconds: 1 };
  const liveness = { initialDelaySeconds: 2, periodSeconds: 2, timeoutSeconds: 1 };
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: o.name,
      namespace: PROBE_NAMESPACE,
      labels: {
        "lace-test.io/network": o.network,
        ...(o.family ? { [FAMILY_LABEL]: o.family } : {}),
      },
    },
    spec: {
      nodeName: o.node,
      terminationGracePeriodSeconds: 1,
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      initContainers: [{
        name: "sidecar",
        image: IMAGES.agnhost,
        imagePullPolicy: "Never",
        args: ["netexec", `--http-port=${side}`, "--udp-port=-1"],
        restartPolicy: "Always",
        ports: [{ name: "side", containerPort: side }],
        startupProbe: {
          httpGet: { path: `/echo?msg=${probeMessage(o.name, "sidecar")}`, port: "side" },
          ...often,
          failureThreshold: 5,
        },
        livenessProbe: { tcpSocket: { port: side }, ...liveness },
      }],
      containers: [
        {
          name: "server",
          image: IMAGES.agnhost,
          imagePullPolicy: "Never",
          args: ["netexec", `--http-port=${http}`, "--udp-port=-1"],
          ports: [{ name: "http", containerPort: http }],
          readinessProbe: {
            httpGet: { path: `/echo?msg=${probeMessage(o.name, "server")}`, port: "http" },
            ...often,
          },
          livenessProbe: { tcpSocket: { port: http }, ...liveness },
        },
        {
          // Listens on every other network's probe ports; nothing probes it.
          name: "decoy",
          image: IMAGES.tenant,
          imagePullPolicy: "Never",
          args: [
            `--http=${
              PORT_OFFSETS.filter((offset) => offset !== o.portOffset).flatMap(probedPorts)
                .join(",")
            }`,
          ],
        },
        {
          name: "grpc",
          image: IMAGES.agnhost,
          imagePullPolicy: "Never",
          args: ["grpc-health-checking", `--port=${grpc}`, `--http-port=${8081 + o.portOffset}`],
          readinessProbe: { grpc: { port: grpc }, ...often },
          livenessProbe: { grpc: { port: grpc }, ...liveness },
        },
      ],
    },
  };
}
