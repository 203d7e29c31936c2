/**
 * The agent's configuration: defaults and validation, separate from how the
 * values arrive (flags, environment, chart). Every part of Lace takes a
 * validated `Config`; nothing else reads flags or the environment.
 */
import { DEFAULT_CNI_SOCKET, DEFAULT_PIN_PATH } from "./cni/protocol.ts";
import type { ChainTarget } from "./cni/chaining/select.ts";
import { CONTAINER_RUNTIME_MODES, type ContainerRuntimeMode } from "./cni/chaining/runtimes.ts";
import { formatDuration } from "./time/duration.ts";
import type { LogFormat, LogLevel } from "./log/setup.ts";
import { CONFLICT_POLICIES, type ConflictPolicy } from "./rules/conflicts.ts";
import { ADDRESS_SHARING, type AddressSharing } from "./rules/address_sharing.ts";
import { MAX_TARGETS, networkMask } from "./probe/key.ts";
import { parseCidr } from "./net/cidr.ts";

export interface Config {
  /** This node's name; pods bound elsewhere are ignored. */
  nodeName: string;
  /** Kubeconfig file; empty means KUBECONFIG, then in-cluster. */
  kubeconfig: string;
  /** Use the Kubernetes API as a pod source. */
  useApi: boolean;
  /** A directory of Pod manifests as a pod source; empty means none. */
  podsDir: string;
  /** bpffs directory that holds Lace's pinned maps and links. */
  pinPath: string;
  /** The kubelet's cgroup v2 directory, or "auto" to find the kubelet in /proc. */
  kubeletCgroup: string;
  /** Prefix under which the host's root filesystem paths are visible (in a container). */
  hostCgroupRoot: string;
  /** The probe flag bit(s) of the socket mark: the data plane skips policy for them. */
  probeMark: number;
  /** Left shift of the network id inside the mark. */
  markShift: number;
  /** Pod annotation that names the pod's Lace network. */
  networkAnnotation: string;
  /** Pod annotation that holds the pod's network id (1..65535). */
  networkIdAnnotation: string;
  /** Delay that gathers bursts of pod events into one reconcile, in ms. */
  debounceMs: number;
  /** Full resync that repairs drift, in ms. */
  resyncMs: number;
  /** A pod watch silent this long gets the API server probed, in ms (a dead watch is restarted). */
  watchLivenessMs: number;
  /** Address of the metrics and health server (host:port); empty disables it. */
  metricsAddr: string;
  /**
   * Loopback address (host:port) of a listener that serves `/healthz` and
   * `/readyz` only, for the kubelet's probes of the agent: no pod outside the
   * host's network can reach or exhaust it, unlike the node's IP. Empty
   * disables it.
   */
  healthAddr: string;
  /**
   * Root-only unix socket serving the agent's full local view (`/targets` too,
   * for `lace targets` and `lace doctor`); empty disables it.
   */
  agentSocket: string;
  /** Unix socket the CNI plugin talks to. */
  cniSocket: string;
  /**
   * auto: the agent chains `lace` into the node's CNI configuration and keeps
   * it there; manual: the operator chains it, and files the agent chained
   * before are restored.
   */
  cniChaining: CniChaining;
  /** The runtime's CNI configuration directory. */
  cniConfDir: string;
  /** Files to chain (names or globs, each with an optional network); empty: the runtime's. */
  cniChainFiles: ChainTarget[];
  /** Where the agent keeps what it needs to restore chained files (on the host, root-only). */
  cniStateDir: string;
  /** The runtime's CNI bin directory, where the `lace` plugin must be before it is chained. */
  cniBinDir: string;
  /**
   * Whose rule picks the file the runtime uses (containerd: the first file or none; CRI-O:
   * the first it can load); auto: the Node's status.nodeInfo.containerRuntimeVersion.
   */
  containerRuntime: ContainerRuntimeMode;
  /**
   * The agent's own DaemonSet (namespace/name): when it is gone or being
   * deleted at shutdown, Lace is being uninstalled and the chain is undone.
   * Empty: a shutdown never undoes the chain.
   */
  daemonSet: string;
  /** What a key claimed by pods of two networks gets: nobody (fail-closed) or the older pod. */
  addressConflict: ConflictPolicy;
  /**
   * Whether pods of two networks may hold one address on this node: exclusive (one network per
   * address; a later pod of another network is refused at ADD or gets no targets there) or
   * shared (networks that trust each other; only per-key conflicts apply).
   */
  addressSharing: AddressSharing;
  /** The most probe targets one pod may have in the map; the rest are reported, not written. */
  maxTargetsPerPod: number;
  /**
   * Whether the ports of postStart and preStop httpGet hooks are targets like
   * probe ports (else the kubelet's hook requests go to the host's network).
   */
  lifecycleHooks: boolean;
  /**
   * Pod address ranges of Lace networks (CIDRs): a kubelet connect into one
   * that matches no target is counted and reported.
   */
  podCidrs: string[];
  logLevel: LogLevel;
  logFormat: LogFormat;
}

export const CNI_CHAINING_MODES = ["auto", "manual"] as const;
export type CniChaining = typeof CNI_CHAINING_MODES[number];

export const DEFAULT_KUBELET_CGROUP = "/sys/fs/cgroup/system.slice/kubelet.service";
/** Where the agent serves its local view, and where `lace targets` and `lace doctor` ask. */
export const DEFAULT_AGENT_SOCKET = "/run/lace/agent.sock";

export function defaultConfig(): Config {
  return {
    nodeName: "",
    kubeconfig: "",
    useApi: true,
    podsDir: "",
    pinPath: DEFAULT_PIN_PATH,
    kubeletCgroup: DEFAULT_KUBELET_CGROUP,
    hostCgroupRoot: "",
    probeMark: 0x1000,
    markShift: 16,
    networkAnnotation: "lace.io/network",
    networkIdAnnotation: "lace.io/network-id",
    debounceMs: 5,
    resyncMs: 5 * 60_000,
    watchLivenessMs: 30_000,
    metricsAddr: "127.0.0.1:9808",
    healthAddr: "",
    cniSocket: DEFAULT_CNI_SOCKET,
    cniChaining: "auto",
    cniConfDir: "/etc/cni/net.d",
    cniChainFiles: [],
    cniStateDir: "/var/lib/lace/cni",
    cniBinDir: "/opt/cni/bin",
    containerRuntime: "auto",
    daemonSet: "",
    addressConflict: "fail-closed",
    addressSharing: "exclusive",
    // Two addresses times three probes times ten containers, with room: a pod that needs
    // more is unusual, and one that wants thousands is trying to fill the map.
    maxTargetsPerPod: 64,
    lifecycleHooks: true,
    podCidrs: [],
    agentSocket: DEFAULT_AGENT_SOCKET,
    logLevel: "info",
    logFormat: "auto",
  };
}

/**
 * Configuration values that cannot work, reported together so an operator
 * fixes them in one go; the CLI reports them with exit code 2.
 */
export class ConfigError extends Error {
  override name = "ConfigError";
  /** One sentence per bad value. */
  readonly problems: readonly string[];

  constructor(problems: readonly string[]) {
    super(problems.join("\n"));
    this.problems = problems;
  }
}

/** What is wrong with the mark layout: the flag and the network bits must be disjoint and fit in 32 bits. */
export function markProblems(probeMark: number, markShift: number): string[] {
  if (!Number.isInteger(markShift) || markShift < 0 || markShift > 16) {
    return [
      `Mark shift must be 0..16 so that 16 network bits fit in the 32-bit mark: ${markShift}`,
    ];
  }
  if (!Number.isInteger(probeMark) || probeMark <= 0 || probeMark > 0xffffffff) {
    return [`Probe mark must be a non-zero 32-bit value: ${probeMark}`];
  }
  const overlap = (probeMark & networkMask({ markShift })) >>> 0;
  if (overlap !== 0) {
    return [
      `Probe mark 0x${probeMark.toString(16)} overlaps the network bits 0x${
        networkMask({ markShift }).toString(16)
      } (mark shift ${markShift}): choose a flag outside them or another shift`,
    ];
  }
  return [];
}

/** Checks the mark layout; throws ConfigError naming the bad value. */
export function validateMark(probeMark: number, markShift: number): void {
  const problems = markProblems(probeMark, markShift);
  if (problems.length > 0) throw new ConfigError(problems);
}

/** What is wrong with a listen address: it must be host:port with a port in 1..65535. */
export function listenAddressProblem(what: string, addr: string): string | undefined {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:\s\[\]]+):(\d{1,5})$/.exec(addr);
  if (!m) return `${what} must be host:port: "${addr}"`;
  const port = Number(m[2]);
  if (port < 1 || port > 65535) return `${what} port must be 1..65535: "${addr}"`;
  return undefined;
}

/**
 * What is wrong with the health address: a listen address on loopback
 * (127.0.0.0/8 or [::1]), where pods cannot reach it. The kubelet's probes of
 * the agent must never depend on what tenants can reach.
 */
export function healthAddressProblem(addr: string): string | undefined {
  const problem = listenAddressProblem("Health address", addr);
  if (problem) return problem;
  const host = addr.slice(0, addr.lastIndexOf(":"));
  if (/^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host) || host === "[::1]") return undefined;
  return `Health address must be on loopback (127.0.0.1:PORT or [::1]:PORT), where pods outside the host's network cannot reach it: "${addr}"`;
}

/** What is wrong with a duration, in ms, that must lie within [min, max]. */
export function durationProblem(
  what: string,
  ms: number,
  min: number,
  max: number,
): string | undefined {
  if (Number.isFinite(ms) && ms >= min && ms <= max) return undefined;
  return `${what} must be ${formatDuration(min)}..${formatDuration(max)}: ${
    Number.isFinite(ms) ? formatDuration(ms) : ms
  }`;
}

/**
 * The bounds of each timed setting. Every one stays far below the longest a
 * timer can wait (MAX_TIMER_MS), where setTimeout would fire at once instead.
 */
export const DURATION_BOUNDS = {
  /** Longer would hold every pod change back for no gain: bursts last milliseconds. */
  debounceMs: { min: 0, max: 60_000 },
  /** A day bounds how long drift behind the agent's back can last. */
  resyncMs: { min: 1000, max: 24 * 3_600_000 },
  /** An hour bounds how long a dead watch can go unnoticed. */
  watchLivenessMs: { min: 1000, max: 3_600_000 },
} as const satisfies Record<string, { min: number; max: number }>;

/** The settings every command that touches the node's BPF state shares. */
export type NodeSettings = Pick<
  Config,
  | "pinPath"
  | "kubeletCgroup"
  | "hostCgroupRoot"
  | "metricsAddr"
  | "agentSocket"
  | "cniConfDir"
  | "cniStateDir"
  | "cniBinDir"
  | "podsDir"
>;

/** What is wrong with the node settings present in `c` (the others are not checked). */
export function nodeProblems(c: Partial<NodeSettings>): string[] {
  const problems: (string | undefined)[] = [];
  if (c.pinPath !== undefined && !c.pinPath.startsWith("/")) {
    problems.push(`Pin path must be absolute: "${c.pinPath}"`);
  }
  if (
    c.kubeletCgroup !== undefined && c.kubeletCgroup !== "auto" &&
    !c.kubeletCgroup.startsWith("/")
  ) {
    problems.push(`Kubelet cgroup must be an absolute path or "auto": "${c.kubeletCgroup}"`);
  }
  if (c.hostCgroupRoot && !c.hostCgroupRoot.startsWith("/")) {
    problems.push(`Host root prefix must be an absolute path or empty: "${c.hostCgroupRoot}"`);
  }
  if (c.metricsAddr) problems.push(listenAddressProblem("Metrics address", c.metricsAddr));
  if (c.agentSocket && !c.agentSocket.startsWith("/")) {
    problems.push(`Agent socket must be an absolute path or empty: "${c.agentSocket}"`);
  }
  return problems.filter((p): p is string => p !== undefined);
}

/** Everything wrong with a configuration, one sentence each naming the bad value. */
export function configProblems(config: Config): string[] {
  const problems: (string | undefined)[] = [
    ...markProblems(config.probeMark, config.markShift),
    ...nodeProblems(config),
  ];
  if (config.healthAddr) {
    problems.push(healthAddressProblem(config.healthAddr));
    if (config.healthAddr === config.metricsAddr) {
      problems.push(
        `Health address must differ from the metrics address: "${config.healthAddr}"`,
      );
    }
  }
  if (!config.useApi && !config.podsDir) {
    problems.push("No pod source: give --pods-dir, or leave the Kubernetes API enabled");
  }
  if (config.useApi && !config.nodeName) {
    problems.push("Node name is required with the Kubernetes API: set --node-name or NODE_NAME");
  }
  const b = DURATION_BOUNDS;
  problems.push(
    durationProblem("Debounce", config.debounceMs, b.debounceMs.min, b.debounceMs.max),
    durationProblem("Resync interval", config.resyncMs, b.resyncMs.min, b.resyncMs.max),
    durationProblem(
      "Watch liveness interval",
      config.watchLivenessMs,
      b.watchLivenessMs.min,
      b.watchLivenessMs.max,
    ),
  );
  if (
    !Number.isInteger(config.maxTargetsPerPod) || config.maxTargetsPerPod < 1 ||
    config.maxTargetsPerPod > MAX_TARGETS
  ) {
    problems.push(
      `Max targets per pod must be a whole number 1..${MAX_TARGETS} (the map's capacity): ${config.maxTargetsPerPod}`,
    );
  }
  if (typeof config.lifecycleHooks !== "boolean") {
    problems.push(
      `Lifecycle hooks must be true or false: ${JSON.stringify(config.lifecycleHooks)}`,
    );
  }
  for (const cidr of config.podCidrs) {
    try {
      parseCidr(cidr);
    } catch (e) {
      problems.push(`Pod CIDRs: ${(e as Error).message}`);
    }
  }
  if (!CONFLICT_POLICIES.includes(config.addressConflict)) {
    problems.push(
      `Address conflict policy must be one of ${
        CONFLICT_POLICIES.join(", ")
      }: "${config.addressConflict}"`,
    );
  }
  if (!ADDRESS_SHARING.includes(config.addressSharing)) {
    problems.push(
      `Address sharing must be one of ${ADDRESS_SHARING.join(", ")}: "${config.addressSharing}"`,
    );
  }
  if (config.cniSocket && !config.cniSocket.startsWith("/")) {
    problems.push(`CNI socket must be an absolute path or empty: "${config.cniSocket}"`);
  }
  if (!CNI_CHAINING_MODES.includes(config.cniChaining)) {
    problems.push(
      `CNI chaining must be one of ${CNI_CHAINING_MODES.join(", ")}: "${config.cniChaining}"`,
    );
  }
  if (!CONTAINER_RUNTIME_MODES.includes(config.containerRuntime)) {
    problems.push(
      `Container runtime must be one of ${
        CONTAINER_RUNTIME_MODES.join(", ")
      }: "${config.containerRuntime}"`,
    );
  }
  for (
    const [what, dir] of [
      ["CNI conf dir", config.cniConfDir],
      ["CNI state dir", config.cniStateDir],
      ["CNI bin dir", config.cniBinDir],
    ]
  ) {
    if (!dir.startsWith("/")) problems.push(`${what} must be an absolute path: "${dir}"`);
  }
  if (config.daemonSet && !/^[a-z0-9][-a-z0-9.]*\/[a-z0-9][-a-z0-9.]*$/.test(config.daemonSet)) {
    problems.push(`DaemonSet must be NAMESPACE/NAME: "${config.daemonSet}"`);
  }
  for (
    const [flag, key] of [
      ["network-annotation", config.networkAnnotation],
      ["network-id-annotation", config.networkIdAnnotation],
    ]
  ) {
    if (!/^([a-z0-9.-]+\/)?[A-Za-z0-9][-A-Za-z0-9_.]*$/.test(key)) {
      problems.push(`--${flag} is not a valid annotation key: "${key}"`);
    }
  }
  return problems.filter((p): p is string => p !== undefined);
}

/** Validates a whole configuration; throws one ConfigError listing every bad value. */
export function validateConfig(config: Config): Config {
  const problems = configProblems(config);
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}
