/**
 * The probe DaemonSet of one run: an agnhost `connect` container (netexec on
 * 1199) and an iperf3 `bandwidth` server (5201), on every Linux node that
 * matches the selector, tolerating every taint, with tiny explicit requests so
 * admission defaults don't inflate them, and locked-down security contexts.
 */
import { CONNECT_PORT, IPERF_PORT, type NetcheckOptions, UDP_PORT } from "../options.ts";

export const APP_LABEL = "app.kubernetes.io/name";
export const APP_NAME = "lace-netcheck";
export const RUN_LABEL = "lace.io/netcheck-run";
/** Which of --networks a probe pod belongs to ("n0", "n1", …). */
export const NETWORK_LABEL = "lace.io/netcheck-network";

/** Where one network's probe pods go: a DaemonSet in a namespace, with extra pod labels. */
export interface ProbeNetwork {
  /** As given to --networks ("tenant-a" or "key=value"); empty for the single default network. */
  name: string;
  namespace: string;
  daemonSet: string;
  /** Labels of the DaemonSet, its selector and its pods. */
  labels: Record<string, string>;
  /** Labels the network plugin reads (the `key=value` of --networks), on the pods only. */
  podLabels: Record<string, string>;
  selector: string;
}

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

/**
 * The networks of a run: without --networks one, in --namespace; else one per
 * entry, `n<i>`-suffixed, in the entry's namespace or (for `key=value`) in
 * --namespace with that pod label.
 */
export function probeNetworks(
  options: Pick<NetcheckOptions, "namespace" | "networks">,
  runId: string,
): ProbeNetwork[] {
  const base = { [APP_LABEL]: APP_NAME, [RUN_LABEL]: runId };
  if (options.networks.length === 0) {
    return [{
      name: "",
      namespace: options.namespace,
      daemonSet: daemonSetName(runId),
      labels: base,
      podLabels: {},
      selector: runSelector(runId),
    }];
  }
  return options.networks.map((name, i) => {
    const eq = name.indexOf("=");
    const id = `n${i}`;
    return {
      name,
      namespace: eq < 0 ? name : options.namespace,
      daemonSet: `${daemonSetName(runId)}-${id}`,
      labels: { ...base, [NETWORK_LABEL]: id },
      podLabels: eq < 0 ? {} : { [name.slice(0, eq)]: name.slice(eq + 1) },
      selector: `${runSelector(runId)},${NETWORK_LABEL}=${id}`,
    };
  });
}

/** Builds the DaemonSet manifest of the run `runId` (of one of its networks). */
export function probeDaemonSet(
  options:
    & Pick<NetcheckOptions, "namespace" | "image" | "bandwidthImage" | "selector">
    & Partial<Pick<NetcheckOptions, "udp">>,
  runId: string,
  network: ProbeNetwork = probeNetworks({ namespace: options.namespace, networks: [] }, runId)[0],
): Record<string, unknown> {
  const labels = network.labels;
  return {
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    metadata: { name: network.daemonSet, namespace: network.namespace, labels },
    spec: {
      selector: { matchLabels: labels },
      template: {
        metadata: { labels: { ...network.podLabels, ...labels } },
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
              // The UDP server (it answers "hostname") only runs when --udp asks for it.
              args: [
                "netexec",
                `--http-port=${CONNECT_PORT}`,
                `--udp-port=${options.udp ? UDP_PORT : -1}`,
              ],
              ports: [
                { name: "connect", containerPort: CONNECT_PORT, protocol: "TCP" },
                ...(options.udp ? [{ name: "udp", containerPort: UDP_PORT, protocol: "UDP" }] : []),
              ],
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
