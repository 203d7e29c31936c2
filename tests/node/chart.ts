/**
 * Lace's chart on a real node (tests/node/node.ts): the real helm against the node's API server,
 * and the values every install on such a node needs. Shared by the real-node tests and the dev
 * node of scripts/dev.
 */
import { AppsV1Api, CoreV1Api, type V1DaemonSet } from "@kubernetes/client-node";
import { join } from "node:path";
import { toolPaths } from "../kube/tools.ts";
import type { Node } from "./node.ts";
import { readyAgentPod } from "./pod_checks.ts";
import { waitFor } from "../helpers/wait.ts";

/** The chart in this checkout. */
export const CHART = new URL("../../deploy/helm/lace", import.meta.url).pathname;

/** Runs the real helm against the node's API server, with its own home under the node's dir. */
export async function helm(node: Node, args: string[]): Promise<string> {
  const { success, text } = await helmRun(node, args);
  if (!success) throw new Error(`helm ${args.join(" ")} failed: ${text}`);
  return text;
}

/** `helm test lace`: whether it passed, and what helm printed (a failing test's log too). */
export function helmTest(node: Node): Promise<{ success: boolean; text: string }> {
  return helmRun(node, ["test", "lace", "--namespace", "lace-system", "--timeout", "3m"]);
}

/** Runs helm as helm() does; its exit status and output, failing or not. */
async function helmRun(node: Node, args: string[]): Promise<{ success: boolean; text: string }> {
  const { helm } = await toolPaths();
  const home = join(node.dir, "helm-home");
  const out = await new Deno.Command(helm, {
    args: [...args, "--kubeconfig", node.controlPlane.kubeconfigPath],
    stdout: "piped",
    stderr: "piped",
    env: {
      HELM_CACHE_HOME: `${home}/cache`,
      HELM_CONFIG_HOME: `${home}/config`,
      HELM_DATA_HOME: `${home}/data`,
    },
  }).output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  return { success: out.success, text };
}

/**
 * `--set` arguments of every install on the node: the chart's defaults but the locally built
 * image, the kubelet's cgroup and the node's own CNI directories (containerd's conf_dir, not the
 * machine's /etc/cni/net.d).
 */
export function nodeChartValues(node: Node): string[] {
  return [
    "--set",
    "image.repository=lace.test/lace",
    "--set",
    "image.tag=dev",
    "--set",
    `node.kubeletCgroupPath=${node.kubeletCgroup}`,
    "--set",
    `node.cni.confDir=${join(node.dir, "net.d")}`,
    "--set",
    `node.cni.stateDir=${join(node.dir, "lace-cni-state")}`,
  ];
}

/**
 * For a node whose conflist chains lace by hand (startNode's default): the chart leaves it as it
 * is (a step of real_node_test.ts takes it out on purpose); automatic chaining is tested on a
 * node of its own (cni_chaining_test.ts).
 */
export const HAND_CHAINED = ["--set", "node.cni.chaining=manual"];

/**
 * `helm install` of the chart with its defaults but nodeChartValues and `extra` (helm arguments;
 * scripts/dev node and the conformance run pass none: node.addressSharing stays exclusive, as
 * their network plugin hands out node-unique addresses). Waits until the agent's pod is Ready.
 */
export async function installLace(node: Node, ...extra: string[]): Promise<void> {
  await helmInstall(node, extra);
  await readyAgentPod(node.controlPlane.adminConfig().makeApiClient(CoreV1Api), node);
}

/** `helm install lace` with nodeChartValues and `extra`, not waiting for the agent. */
async function helmInstall(node: Node, extra: string[]): Promise<void> {
  await helm(node, [
    "install",
    "lace",
    CHART,
    "--namespace",
    "lace-system",
    "--create-namespace",
    ...nodeChartValues(node),
    ...extra,
  ]);
}

/** `helm upgrade lace` to nodeChartValues and `extra` only (earlier --set values are reset). */
export function upgradeLace(node: Node, ...extra: string[]): Promise<string> {
  return helm(node, [
    "upgrade",
    "lace",
    CHART,
    "--namespace",
    "lace-system",
    "--reset-values",
    ...nodeChartValues(node),
    ...extra,
  ]);
}

/** `helm uninstall lace`, waiting for its resources to go. */
export function uninstallLace(node: Node): Promise<string> {
  return helm(node, ["uninstall", "lace", "--namespace", "lace-system", "--wait"]);
}

/**
 * Takes Lace off the node as an operator does: `helm uninstall`, the agent pod gone, then
 * `lace uninstall` for the pins, which outlive the agent on purpose.
 */
export async function removeLace(node: Node): Promise<void> {
  await uninstallLace(node);
  const core = node.controlPlane.adminConfig().makeApiClient(CoreV1Api);
  await waitFor(async () => {
    const list = await core.listNamespacedPod({ namespace: "lace-system" });
    return list.items.length === 0;
  }, { timeout: 60_000, interval: 250, message: "the agent pod to be gone" });
  await node.exec(["/opt/cni/bin/lace", "uninstall"]);
}

/** What differs between nodes in the chart's values: the node paths under the run directory. */
export interface NodePaths {
  name: string;
  dir: string;
  kubeletCgroup: string;
}

/** The label that tells the per-node copies of the agent's DaemonSet apart. */
const COPY_LABEL = "lace.test/node-copy";

/**
 * `helm install` of the chart on several real nodes (the first a `cluster` node, the others
 * joined by second_node.ts), waiting until every node's agent is Ready. The chart's node paths
 * (CNI directories, the kubelet's cgroup) are one value for every node, but each real node keeps
 * them under its own run directory, as a node pool with other paths would: the release runs on
 * the first node only, and each other node gets a copy of its DaemonSet with that node's paths
 * (gone with the cluster; `helm uninstall` leaves them). The copies still name the release's
 * DaemonSet as theirs, so `helm uninstall` reads as an uninstall to their agents too.
 */
export async function installLaceOnNodes(
  first: Node,
  others: readonly NodePaths[],
  ...extra: string[]
): Promise<void> {
  const onFirst = ["--set-string", `nodeSelector.kubernetes\\.io/hostname=${first.name}`];
  await helmInstall(first, [...onFirst, ...extra]);
  const config = first.controlPlane.adminConfig();
  const apps = config.makeApiClient(AppsV1Api);
  const release = await apps.readNamespacedDaemonSet({ name: "lace", namespace: "lace-system" });
  for (const other of others) {
    const copy = nodeCopy(release, first, other);
    await apps.createNamespacedDaemonSet({ namespace: "lace-system", body: copy });
  }
  const core = config.makeApiClient(CoreV1Api);
  for (const node of [first, ...others]) await readyAgentPod(core, node);
}

/** The release's DaemonSet for `other`: `first`'s node paths replaced by its own. */
function nodeCopy(release: V1DaemonSet, first: NodePaths, other: NodePaths): V1DaemonSet {
  const spec = JSON.parse(
    JSON.stringify(release.spec)
      .replaceAll(first.kubeletCgroup, other.kubeletCgroup)
      .replaceAll(first.dir, other.dir)
      .replaceAll(`"${first.name}"`, `"${other.name}"`),
  );
  spec.selector.matchLabels[COPY_LABEL] = other.name;
  spec.template.metadata.labels[COPY_LABEL] = other.name;
  return {
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    metadata: {
      name: `lace-${other.name}`,
      namespace: "lace-system",
      labels: { ...release.metadata?.labels, [COPY_LABEL]: other.name },
    },
    spec,
  };
}
