/**
 * What `lace doctor`'s checks read (a snapshot of the node, gathered by snapshot.ts) and what
 * each yields (a Check that says what is wrong and how to fix it), with the helpers every
 * check file builds them with.
 */
import type { AddressesView, ChainingView, TargetView, UnmatchedView } from "../agent_api/views.ts";
import type { ApiServerProcess, ProcessInfo } from "../cgroup/kubelet_finder.ts";
import type { DistrustedKubelet } from "../cgroup/kubelet_trust.ts";
import type { ChainStatus } from "../cni/chaining/status.ts";

export interface Check {
  name: string;
  ok: boolean;
  message: string;
  /** What to do; empty when ok. */
  fix: string;
  /** "error" checks decide the exit code; "warning" ones only inform. */
  severity: "error" | "warning";
}

export interface LinkSnapshot {
  program: string;
  pinned: boolean;
  alive: boolean;
  cgroupId: bigint;
  progId: number;
}

/** Everything the checks look at; each field holds a value or why it could not be read. */
export interface NodeSnapshot {
  pinPath: string;
  bpffsMounts: string[];
  /** The filesystem type under the pin path (or its nearest existing parent). */
  pinPathFsType: string | null;
  /** Each bpffs mount's root directory mode (null when it cannot be read). */
  bpffsModes: { mountPoint: string; mode: number | null }[];
  /**
   * Why the pin path or a layout directory under it is not root's alone (os/root_dir.ts);
   * `tightenable` when the agent makes it 0700 at its next start.
   */
  pinDirProblems: { problem: string; tightenable: boolean }[];
  /**
   * Processes of users other than root that have the pin path or a directory under it open: they
   * may hold Lace's locks (a descriptor opened while the directory was 0755). Only what this
   * process may inspect (root with CAP_SYS_PTRACE sees all).
   */
  pinDirOpeners: { dir: string; pid: number; uid: number; comm: string | null }[];
  mapPinned: boolean;
  /** The map layouts (ABI versions) pinned under the pin path, newest first. */
  layouts: number[];
  links: LinkSnapshot[] | { error: string };
  info: { abiVersion: number; objectSha256: string } | null | { error: string };
  binarySha256: string | { error: string };
  /** The map layout this lace's object declares; null when the object cannot be read. */
  binaryAbi: number | null;
  cgroup2Mounts: string[];
  kubeletCgroup: {
    configured: string;
    path: string | null;
    error: string | null;
    id: bigint | null;
  };
  /** The kubelet processes that may be trusted as the kubelet (kubelet_trust.ts), best first. */
  kubelets: { pid: number; comm: string; cgroupDir: string }[];
  /** Kubelet-looking processes that may not, with why. */
  otherKubelets: DistrustedKubelet[];
  /** Those beyond the MAX_LOOKALIKES listed (cgroup/kubelet_finder.ts): counted only. */
  otherKubeletsNotListed: number;
  extraProcesses: ProcessInfo[];
  /** Processes in the kubelet cgroup that serve the Kubernetes API (k3s server, kubelite …). */
  apiServers: ApiServerProcess[];
  agent: {
    addr: string;
    healthz: number | null;
    readyz: { status: number; body: string } | null;
    targets: TargetView[] | null;
    /** Recent kubelet connects into pod ranges that matched no target (the agent's /unmatched). */
    unmatched: UnmatchedView[] | null;
    /** Addresses pods of several networks hold (the agent's /addresses); null from an older agent. */
    addresses?: AddressesView | null;
    /** The agent's CNI chaining at its last pass (its /chaining); null when none runs. */
    chaining?: ChainingView | null;
    error: string | null;
  };
  mapEntries: number | { error: string };
  counters: Record<string, bigint> | { error: string };
  /** A cgroup directory by id (to say where a link really is), or null. */
  cgroupPathOf: (id: bigint) => string | null;
  /** What the runtime's CNI configuration says about the lace plugin; absent: not checked. */
  cniChaining?: ChainStatus;
  /** The runtime's CNI bin directory and why the lace plugin there is unusable (plugin.ts). */
  cniPlugin?: { dir: string; problem: string | undefined };
  /** The pods directory and why the agent refuses it (pods/dir_trust.ts); absent: not checked. */
  podsDir?: { dir: string; problem: string | undefined };
}

/** Whether a snapshot field holds why it could not be read instead of a value. */
export function isError(v: unknown): v is { error: string } {
  return typeof v === "object" && v !== null && "error" in v;
}

/** One check; `fix` is dropped when it passes. */
export function check(
  name: string,
  ok: boolean,
  message: string,
  fix = "",
  severity: Check["severity"] = "error",
): Check {
  return { name, ok, message, fix: ok ? "" : fix, severity };
}

/** The fix for anything only a running agent creates. */
export const START_AGENT =
  "start the agent (`lace agent`, the lace-agent systemd unit or the Helm " +
  "chart's DaemonSet) with the same --pin-path";
