/**
 * Lace's chart on a real node (tests/node/node.ts): the real helm against the node's API server,
 * and the values every install on such a node needs. Shared by the real-node tests and the dev
 * node of scripts/dev.
 */
import { CoreV1Api } from "@kubernetes/client-node";
import { join } from "node:path";
import { toolPaths } from "../kube/tools.ts";
import type { Node } from "./node.ts";
import { readyAgentPod } from "./pod_checks.ts";

/** The chart in this checkout. */
export const CHART = new URL("../../deploy/helm/lace", import.meta.url).pathname;

/** Runs the real helm against the node's API server, with its own home under the node's dir. */
export async function helm(node: Node, args: string[]): Promise<string> {
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
  if (!out.success) throw new Error(`helm ${args.join(" ")} failed: ${text}`);
  return text;
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
  await readyAgentPod(node.controlPlane.adminConfig().makeApiClient(CoreV1Api), node);
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
