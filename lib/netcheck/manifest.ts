/**
 * The probe DaemonSet of one run: an agnhost `connect` container (netexec on
 * 1199) and an iperf3 `bandwidth` server (5201), on every Linux node that
 * matches the selector, tolerating every taint, with tiny explicit requests so
 * admission defaults don't inflate them, and locked-down security contexts.
 */
import { CONNECT_PORT, IPERF_PORT, type NetcheckOptions } from "./options.ts";

export const APP_LABEL = "app.kubernetes.io/name";
export const APP_NAME = "lace-netcheck";
export const RUN_LABEL = "lace.io/netcheck-run";

/** Name of a run's DaemonSet. */
export function daemonSetName(runId: string): string {
  return `lace-netcheck-${runId}`;
}

/** Label selector of a run's pods. */
export function runSelector(runId: string): string {
  return `${APP_LABEL}=${APP_NAME},${RUN_LABEL}=${runId}`;
}

const resources = {
  requests: { cpu: "1m", memory: "16Mi" },
  limits: { memory: "256Mi" },
};

const securityContext = {
  allowPrivilegeEscalation: false,
  capabilities: { drop: ["ALL"] },
  seccompProfile: { type: "RuntimeDefault" },
};

/** Builds the DaemonSet manifest of the run `runId`. */
export function probeDaemonSet(
  options: Pick<NetcheckOptions, "namespace" | "image" | "bandwidthImage" | "selector">,
  runId: string,
): Record<string, unknown> {
  const labels = { [APP_LABEL]: APP_NAME, [RUN_LABEL]: runId };
  return {
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    metadata: { name: daemonSetName(runId), namespace: options.namespace, labels },
    spec: {
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          nodeSelector: { ...options.selector, "kubernetes.io/os": "linux" },
          tolerations: [{ operator: "Exists" }],
          terminationGracePeriodSeconds: 1,
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          containers: [
            {
              name: "connect",
              image: options.image,
              args: ["netexec", `--http-port=${CONNECT_PORT}`, "--udp-port=-1"],
              ports: [{ name: "connect", containerPort: CONNECT_PORT, protocol: "TCP" }],
              readinessProbe: {
                tcpSocket: { port: CONNECT_PORT },
                periodSeconds: 2,
              },
              resources,
              securityContext,
            },
            {
              name: "bandwidth",
              image: options.bandwidthImage,
              command: ["iperf3"],
              args: ["-s", "-p", String(IPERF_PORT)],
              ports: [{ name: "iperf3", containerPort: IPERF_PORT, protocol: "TCP" }],
              // No TCP probe here: a bare connect to an iperf3 server makes it
              // refuse a real client as busy for a moment.
              resources,
              securityContext,
              volumeMounts: [{ name: "tmp", mountPath: "/tmp" }],
            },
          ],
          volumes: [{ name: "tmp", emptyDir: {} }],
        },
      },
    },
  };
}
