/**
 * The container runtimes whose rule for choosing a CNI configuration file the agent knows
 * (runtime_file.ts), and how a Node names them. Pure words, for the config and the chaining.
 */

/** The runtimes whose rule the agent knows. */
export const CONTAINER_RUNTIMES = ["containerd", "crio"] as const;
export type ContainerRuntime = typeof CONTAINER_RUNTIMES[number];
/** `--container-runtime`: a runtime, or auto (the Node's status.nodeInfo.containerRuntimeVersion). */
export const CONTAINER_RUNTIME_MODES = ["auto", ...CONTAINER_RUNTIMES] as const;
export type ContainerRuntimeMode = typeof CONTAINER_RUNTIME_MODES[number];

/** The runtime a Node's `containerRuntimeVersion` names (`containerd://2.1.4`, `cri-o://1.33.2`). */
export function runtimeOfVersion(version: string): ContainerRuntime | undefined {
  const scheme = version.split("://")[0].toLowerCase();
  if (scheme === "containerd") return "containerd";
  if (scheme === "cri-o" || scheme === "crio") return "crio";
  return undefined;
}

const RUNTIME_NAMES: Record<ContainerRuntime, string> = { containerd: "containerd", crio: "CRI-O" };

/** The runtime's name in a sentence ("the runtime" when unknown: CRI-O's rule applies). */
export function runtimeName(runtime: ContainerRuntime | undefined): string {
  return runtime ? RUNTIME_NAMES[runtime] : "the runtime";
}
