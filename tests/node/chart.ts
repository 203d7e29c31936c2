/**
 * The chart on a real node (tests/node/node.ts): the real helm against the node's API server,
 * with the values every install and upgrade of the node's tests share (the image built here and
 * the kubelet's cgroup), then each test's own.
 */
import { join } from "node:path";
import { toolPaths } from "../kube/tools.ts";
import type { Node } from "./node.ts";

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
 * The values of every install and upgrade: the chart's defaults but the image, the kubelet's
 * cgroup and the node's CNI directories.
 */
export function nodeValues(node: Node): string[] {
  return [
    "--set",
    "image.repository=lace.test/lace",
    "--set",
    "image.tag=dev",
    "--set",
    `node.kubeletCgroupPath=${node.kubeletCgroup}`,
    // The node's own CNI configuration (containerd's conf_dir), not the machine's /etc/cni/net.d.
    "--set",
    `node.cni.confDir=${join(node.dir, "net.d")}`,
    "--set",
    `node.cni.stateDir=${join(node.dir, "lace-cni-state")}`,
    // The node's conflist chains lace by hand (and a step of real_node_test.ts takes it out on
    // purpose); automatic chaining is tested on a node of its own (cni_chaining_test.ts).
    "--set",
    "node.cni.chaining=manual",
  ];
}

/** `helm install lace` with the node's values and `extra` (helm arguments). */
export function installLace(node: Node, ...extra: string[]): Promise<string> {
  return helm(node, [
    "install",
    "lace",
    CHART,
    "--namespace",
    "lace-system",
    "--create-namespace",
    ...nodeValues(node),
    ...extra,
  ]);
}

/** `helm upgrade lace` to the node's values and `extra` only (earlier --set values are reset). */
export function upgradeLace(node: Node, ...extra: string[]): Promise<string> {
  return helm(node, [
    "upgrade",
    "lace",
    CHART,
    "--namespace",
    "lace-system",
    "--reset-values",
    ...nodeValues(node),
    ...extra,
  ]);
}

/** `helm uninstall lace`, waiting for its resources to go. */
export function uninstallLace(node: Node): Promise<string> {
  return helm(node, ["uninstall", "lace", "--namespace", "lace-system", "--wait"]);
}
