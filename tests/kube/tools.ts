/**
 * The binaries the Kubernetes end-to-end tests run (etcd, kube-apiserver, helm): where
 * scripts/build_k8s_tools.sh caches them for the versions tests/k8s/go.mod and the script pin,
 * and whether they are there, so tests without them skip with a stated reason.
 */

import { isExecutable } from "../helpers/executable.ts";
import { skipIf } from "../helpers/skip.ts";

const repoRoot = new URL("../../", import.meta.url).pathname;

/** Where the built binaries are: the build script's cache, or LACE_* variables naming files. */
export interface ToolPaths {
  kubeApiServer: string;
  etcd: string;
  helm: string;
}

/** The version a `require` line of tests/k8s/go.mod pins for module. */
function pinnedVersion(goMod: string, module: string): string {
  const escaped = module.replaceAll(".", "\\.");
  const match = goMod.match(new RegExp(`^\\s*(?:require\\s+)?${escaped}\\s+(v\\S+)`, "m"));
  if (!match) throw new Error(`tests/k8s/go.mod does not require "${module}"`);
  return match[1];
}

function toolsCache(): string {
  return Deno.env.get("LACE_TOOLS_CACHE") ??
    `${Deno.env.get("HOME") ?? "/root"}/.cache/lace/tools`;
}

/** Paths of kube-apiserver, etcd and helm as scripts/build_k8s_tools.sh caches them. */
export async function toolPaths(): Promise<ToolPaths> {
  const cache = toolsCache();
  const goMod = await Deno.readTextFile(`${repoRoot}tests/k8s/go.mod`);
  const script = await Deno.readTextFile(`${repoRoot}scripts/build_k8s_tools.sh`);
  const helmVersion = script.match(/^HELM_VERSION=(\S+)/m)?.[1];
  if (!helmVersion) throw new Error("scripts/build_k8s_tools.sh has no HELM_VERSION line");
  const kube = pinnedVersion(goMod, "k8s.io/kubernetes");
  const etcd = pinnedVersion(goMod, "go.etcd.io/etcd/server/v3");
  return {
    kubeApiServer: Deno.env.get("LACE_KUBE_APISERVER") ??
      `${cache}/kube-apiserver-${kube}/kube-apiserver`,
    etcd: Deno.env.get("LACE_ETCD") ?? `${cache}/etcd-${etcd}/etcd`,
    helm: Deno.env.get("LACE_HELM") ?? `${cache}/helm-${helmVersion}/helm`,
  };
}

/** The binaries of the real node (tests/node/) as scripts/build_k8s_tools.sh caches them. */
export interface NodeToolPaths {
  kubelet: string;
  kubeControllerManager: string;
  kubeScheduler: string;
  containerd: string;
  /** containerd's runc shim, which must come first on containerd's PATH. */
  containerdShim: string;
  ctr: string;
  pause: string;
  agnhost: string;
}

/** Paths of the node's binaries for the versions tests/k8s and tests/containerd pin. */
export async function nodeToolPaths(): Promise<NodeToolPaths> {
  const cache = toolsCache();
  const kube = pinnedVersion(
    await Deno.readTextFile(`${repoRoot}tests/k8s/go.mod`),
    "k8s.io/kubernetes",
  );
  const containerdMod = await Deno.readTextFile(`${repoRoot}tests/containerd/go.mod`);
  const containerd = `${cache}/containerd-${
    pinnedVersion(containerdMod, "github.com/containerd/containerd/v2")
  }`;
  const kubeTool = (name: string) => `${cache}/${name}-${kube}/${name}`;
  return {
    kubelet: kubeTool("kubelet"),
    kubeControllerManager: kubeTool("kube-controller-manager"),
    kubeScheduler: kubeTool("kube-scheduler"),
    containerd: `${containerd}/containerd`,
    containerdShim: `${containerd}/containerd-shim-runc-v2`,
    ctr: `${containerd}/ctr`,
    pause: kubeTool("pause"),
    agnhost: kubeTool("agnhost"),
  };
}

/**
 * Path of a binary of the kubernetes module that only the dev node and the conformance run use
 * (`kubectl`, upstream's `e2e.test`), as scripts/build_k8s_tools.sh caches it.
 */
export async function kubeToolPath(name: "kubectl" | "e2e.test"): Promise<string> {
  const kube = pinnedVersion(
    await Deno.readTextFile(`${repoRoot}tests/k8s/go.mod`),
    "k8s.io/kubernetes",
  );
  return `${toolsCache()}/${name}-${kube}/${name}`;
}

/** Path of krew as scripts/build_k8s_tools.sh caches it for the version tests/krew/go.mod pins. */
export async function krewPath(): Promise<string> {
  const goMod = await Deno.readTextFile(`${repoRoot}tests/krew/go.mod`);
  return `${toolsCache()}/krew-${pinnedVersion(goMod, "sigs.k8s.io/krew")}/krew`;
}

/**
 * Why the control plane cannot start here, or undefined when it can. Tests pass this to
 * controlPlaneTestOptions(), so a machine without the built binaries skips them with a stated
 * reason (and fails them as root).
 */
export async function controlPlaneUnavailableReason(): Promise<string | undefined> {
  const tools = await toolPaths();
  for (const path of [tools.etcd, tools.kubeApiServer]) {
    if (!isExecutable(path)) {
      return `"${path}" is not built; run scripts/build_k8s_tools.sh`;
    }
  }
  try {
    await new Deno.Command("openssl", { args: ["version"], stdout: "null" }).output();
  } catch {
    return "openssl is not installed; it makes the control plane's certificates";
  }
  return undefined;
}

/**
 * Why the real node cannot start here, or undefined when it can: the control plane's reason,
 * a node binary not built, or a host program missing (runc, socat, nsenter, unshare).
 */
export async function nodeUnavailableReason(): Promise<string | undefined> {
  if (Deno.uid?.() !== 0) return "the node needs root (namespaces, cgroups, mounts)";
  const control = await controlPlaneUnavailableReason();
  if (control) return control;
  if (!(await helmAvailable())) return `helm is not built; run scripts/build_k8s_tools.sh`;
  for (const path of Object.values(await nodeToolPaths())) {
    if (!isExecutable(path)) {
      return `"${path}" is not built; run scripts/build_k8s_tools.sh`;
    }
  }
  for (const program of ["runc", "socat", "nsenter", "unshare"]) {
    const found = await new Deno.Command("sh", {
      args: ["-c", `command -v ${program}`],
      stdout: "null",
    }).output();
    if (!found.success) return `${program} is not installed; run scripts/setup.sh --tests`;
  }
  return undefined;
}

/** Whether the built helm binary exists (see scripts/build_k8s_tools.sh). */
export async function helmAvailable(): Promise<boolean> {
  return isExecutable((await toolPaths()).helm);
}

/** Why the control plane or helm cannot run here (chart-on-API-server tests), or undefined. */
export async function chartOnControlPlaneUnavailableReason(): Promise<string | undefined> {
  const reason = await controlPlaneUnavailableReason();
  if (reason) return reason;
  if (!(await helmAvailable())) return "helm is not built; run scripts/build_k8s_tools.sh";
  return undefined;
}

/**
 * `Deno.test` options for a test on the control plane: skipped when
 * `unavailable` gives a reason (a failure as root, helpers/skip.ts); the API
 * server's clients and processes outlive single steps, so the op and resource
 * sanitizers are off.
 */
export function controlPlaneTestOptions(unavailable: string | undefined) {
  return { ignore: skipIf(unavailable), sanitizeOps: false, sanitizeResources: false };
}
