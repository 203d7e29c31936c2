/**
 * The chart's netcheck runner as two_node_netcheck_test.ts's Deployment steps see it: its flags,
 * the API clients, its pods, Lease, probe pods and processes, what it leaves behind, and the waits
 * on them (netcheck_deployment.ts).
 */
import assert from "node:assert/strict";
import {
  AppsV1Api,
  CoordinationV1Api,
  CoreV1Api,
  RbacAuthorizationV1Api,
} from "@kubernetes/client-node";
import { kubeToolPath } from "../kube/tools.ts";
import { waitFor } from "../helpers/wait.ts";
import { CHART, helm } from "./chart.ts";
import { IMAGES } from "./images.ts";
import type { Node } from "./node.ts";
import { isReady } from "./pod_checks.ts";

/**
 * The chart's netcheck namespace here: one that exists already (`netcheck.createNamespace=false`),
 * as two_node_netcheck_test.ts's runs left it, so that disabling the chart cannot lean on the
 * namespace's deletion to remove what the runner made. Mapped to a network by the nodes.
 */
export const WATCH_NAMESPACE = "lace-netcheck";
/** Namespaces whose pods the nodes' network plugin must attach: the runner's and its probes'. */
export const DEPLOYMENT_NAMESPACES = ["lace-system", WATCH_NAMESPACE];
export const RELEASE_NAMESPACE = "lace-system";
const RUNNER = "lace-netcheck";
const RUNNER_SELECTOR = "app.kubernetes.io/component=netcheck";
const PROBE_SELECTOR = "app.kubernetes.io/name=lace-netcheck";
export const LABEL = "lace-test.io/network";
/** The two networks the runner checks each round, isolation between them included. */
export const WATCH_NETWORKS = [`${LABEL}=red`, `${LABEL}=green`];

/** Flags of the runner: this fixture's images, short timeouts, both networks. */
const EXTRA_ARGS = [
  `--image=${IMAGES.agnhost}`,
  `--bandwidth-image=${IMAGES.iperf3}`,
  "--timeout=2s",
  "--bandwidth-time=1s",
  "--latency-samples=3",
  `--networks=${WATCH_NETWORKS.join(",")}`,
];

/** `helm upgrade` of the release keeping its values, with netcheck on or off. */
export function setNetcheck(first: Node, enabled: boolean, ...extra: string[]): Promise<string> {
  return helm(first, [
    "upgrade",
    "lace",
    CHART,
    "--namespace",
    RELEASE_NAMESPACE,
    "--reuse-values",
    "--set",
    `netcheck.enabled=${enabled}`,
    "--set",
    `netcheck.namespace=${WATCH_NAMESPACE}`,
    "--set",
    "netcheck.createNamespace=false",
    "--set",
    "netcheck.interval=10s",
    "--set-json",
    `netcheck.extraArgs=${JSON.stringify(EXTRA_ARGS)}`,
    ...extra,
  ]);
}

export interface Clients {
  core: CoreV1Api;
  apps: AppsV1Api;
  coordination: CoordinationV1Api;
  rbac: RbacAuthorizationV1Api;
}

export function clients(first: Node): Clients {
  const config = first.controlPlane.adminConfig();
  return {
    core: config.makeApiClient(CoreV1Api),
    apps: config.makeApiClient(AppsV1Api),
    coordination: config.makeApiClient(CoordinationV1Api),
    rbac: config.makeApiClient(RbacAuthorizationV1Api),
  };
}

/** Running runner pods, not being deleted. */
export async function runnerPods(core: CoreV1Api) {
  const list = await core.listNamespacedPod({
    namespace: RELEASE_NAMESPACE,
    labelSelector: RUNNER_SELECTOR,
  });
  return list.items.filter((p) => p.status?.phase === "Running" && !p.metadata?.deletionTimestamp);
}

/** The Lease's holder, or undefined without one. */
export async function leaseHolder(coordination: CoordinationV1Api): Promise<string | undefined> {
  try {
    const lease = await coordination.readNamespacedLease({
      name: RUNNER,
      namespace: WATCH_NAMESPACE,
    });
    return lease.spec?.holderIdentity;
  } catch {
    return undefined;
  }
}

/** What the runner's pods and the watch namespace hold, for a failure message. */
export async function describeRunner(first: Node, { core }: Clients): Promise<string> {
  const lines: string[] = [];
  const pods = await core.listNamespacedPod({
    namespace: RELEASE_NAMESPACE,
    labelSelector: RUNNER_SELECTOR,
  }).catch(() => ({ items: [] }));
  for (const pod of pods.items) {
    const name = pod.metadata!.name!;
    lines.push(`runner ${name}: ${JSON.stringify(pod.status?.containerStatuses ?? pod.status)}`);
    const log = await core.readNamespacedPodLog({
      name,
      namespace: RELEASE_NAMESPACE,
      tailLines: 40,
    }).catch((e) => `(no log: ${e})`);
    lines.push(`--- log of ${name} ---\n${log}`);
  }
  const events = await core.listNamespacedEvent({ namespace: RELEASE_NAMESPACE })
    .then((l) =>
      l.items.slice(-20).map((e) => `${e.involvedObject.name} ${e.reason}: ${e.message}`)
    )
    .catch(() => []);
  lines.push("--- events ---", ...events);
  lines.push(await first.logs(20));
  return lines.join("\n");
}

/** The names of what the enabled chart made for netcheck and what it left running, by kind. */
export async function netcheckLeftovers(
  { core, apps, coordination, rbac }: Clients,
): Promise<string[]> {
  const left: string[] = [];
  const exists = (what: string, read: () => Promise<unknown>) =>
    read().then(() => left.push(what), () => {});
  const dss = await apps.listNamespacedDaemonSet({ namespace: WATCH_NAMESPACE })
    .catch(() => ({ items: [] }));
  for (const ds of dss.items) left.push(`DaemonSet ${ds.metadata!.name}`);
  const pods = await core.listNamespacedPod({ namespace: WATCH_NAMESPACE })
    .catch(() => ({ items: [] }));
  for (const pod of pods.items) left.push(`Pod ${WATCH_NAMESPACE}/${pod.metadata!.name}`);
  const holder = await leaseHolder(coordination);
  if (holder !== undefined) left.push(`Lease held by ${holder}`);
  for (
    const pod of (await core.listNamespacedPod({
      namespace: RELEASE_NAMESPACE,
      labelSelector: RUNNER_SELECTOR,
    })).items
  ) left.push(`runner Pod ${pod.metadata!.name}`);
  const name = "lace-netcheck";
  const inRelease = { name, namespace: RELEASE_NAMESPACE };
  const inWatch = { name, namespace: WATCH_NAMESPACE };
  const reads: [kind: string, read: () => Promise<unknown>][] = [
    ["Deployment", () => apps.readNamespacedDeployment(inRelease)],
    ["ServiceAccount", () => core.readNamespacedServiceAccount(inRelease)],
    ["ClusterRole", () => rbac.readClusterRole({ name })],
    ["Role", () => rbac.readNamespacedRole(inWatch)],
    ["RoleBinding", () => rbac.readNamespacedRoleBinding(inWatch)],
    ["ConfigMap", () => core.readNamespacedConfigMap(inWatch)],
    ["ClusterRoleBinding", () => rbac.readClusterRoleBinding({ name })],
  ];
  for (const [kind, read] of reads) await exists(`${kind} ${name}`, read);
  return left;
}

/** The 4 probe pods (2 networks × 2 nodes) once all are Ready. */
export function readyProbePods(core: CoreV1Api) {
  return waitFor(async () => {
    const list = await core.listNamespacedPod({
      namespace: WATCH_NAMESPACE,
      labelSelector: PROBE_SELECTOR,
    });
    const ready = list.items.filter(isReady);
    return ready.length === 4 && ready;
  }, { timeout: 90_000, interval: 500, message: "4 Ready probe pods" });
}

/**
 * The runner's processes as the machine sees them (the lace image runs Deno on its source: the
 * command line names main.ts, netcheck and --watch).
 */
export function runnerProcesses(): number[] {
  const found: number[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const args = Deno.readTextFileSync(`/proc/${entry.name}/cmdline`).split("\0");
      const main = args.findIndex((a) => a.endsWith("/src/main.ts"));
      if (main >= 0 && args[main + 1] === "netcheck" && args[main + 2] === "--watch") {
        found.push(Number(entry.name));
      }
    } catch {
      // Exited meanwhile.
    }
  }
  return found;
}

/** `kubectl scale` of the runner's Deployment. */
export async function scale(first: Node, replicas: number): Promise<void> {
  const out = await new Deno.Command(await kubeToolPath("kubectl"), {
    args: [
      `--kubeconfig=${first.controlPlane.kubeconfigPath}`,
      "--namespace",
      RELEASE_NAMESPACE,
      "scale",
      `deployment/${RUNNER}`,
      `--replicas=${replicas}`,
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
}
