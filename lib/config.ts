/**
 * The agent's configuration: defaults and validation, separate from how the
 * values arrive (flags, environment, chart). Every part of Lace takes a
 * validated `Config`; nothing else reads flags or the environment.
 */

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
  /** Unix socket the CNI plugin talks to. */
  cniSocket: string;
  logLevel: LogLevel;
  logFormat: "auto" | "json" | "text";
}

export type LogLevel = "trace" | "debug" | "info" | "warning" | "error" | "fatal";
export const LOG_LEVELS: readonly LogLevel[] = [
  "trace",
  "debug",
  "info",
  "warning",
  "error",
  "fatal",
];

export const DEFAULT_KUBELET_CGROUP = "/sys/fs/cgroup/system.slice/kubelet.service";

export function defaultConfig(): Config {
  return {
    nodeName: "",
    kubeconfig: "",
    useApi: true,
    podsDir: "",
    pinPath: "/sys/fs/bpf/lace",
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
    cniSocket: "/run/lace/cni.sock",
    logLevel: "info",
    logFormat: "auto",
  };
}

/** A configuration value that cannot work; the CLI reports it with exit code 2. */
export class ConfigError extends Error {
  override name = "ConfigError";
}

/** The bits of the mark that carry the network id. */
export function networkMask(config: Pick<Config, "markShift">): number {
  return (0xffff * 2 ** config.markShift) >>> 0;
}

/**
 * The socket mark for a network: the contract with the data plane,
 * `probeFlag | networkId << markShift`.
 */
export function markFor(
  config: Pick<Config, "probeMark" | "markShift">,
  networkId: number,
): number {
  if (!Number.isInteger(networkId) || networkId < 1 || networkId > 65535) {
    throw new RangeError(`Network id out of range 1..65535: ${networkId}`);
  }
  return (config.probeMark | (networkId * 2 ** config.markShift)) >>> 0;
}

/** Checks the mark layout: the flag and the network bits must be disjoint and fit in 32 bits. */
export function validateMark(probeMark: number, markShift: number): void {
  if (!Number.isInteger(markShift) || markShift < 0 || markShift > 16) {
    throw new ConfigError(
      `Mark shift must be 0..16 so that 16 network bits fit in the 32-bit mark: ${markShift}`,
    );
  }
  if (!Number.isInteger(probeMark) || probeMark <= 0 || probeMark > 0xffffffff) {
    throw new ConfigError(`Probe mark must be a non-zero 32-bit value: ${probeMark}`);
  }
  const overlap = (probeMark & networkMask({ markShift })) >>> 0;
  if (overlap !== 0) {
    throw new ConfigError(
      `Probe mark 0x${probeMark.toString(16)} overlaps the network bits 0x${
        networkMask({ markShift }).toString(16)
      } (mark shift ${markShift}): choose a flag outside them or another shift`,
    );
  }
}

/** Validates a whole configuration; throws ConfigError naming the bad value. */
export function validateConfig(config: Config): Config {
  validateMark(config.probeMark, config.markShift);
  if (!config.pinPath.startsWith("/")) {
    throw new ConfigError(`Pin path must be absolute: "${config.pinPath}"`);
  }
  if (config.kubeletCgroup !== "auto" && !config.kubeletCgroup.startsWith("/")) {
    throw new ConfigError(
      `Kubelet cgroup must be an absolute path or "auto": "${config.kubeletCgroup}"`,
    );
  }
  if (!config.useApi && !config.podsDir) {
    throw new ConfigError("No pod source: give --pods-dir, or leave the Kubernetes API enabled");
  }
  if (config.useApi && !config.nodeName) {
    throw new ConfigError(
      "Node name is required with the Kubernetes API: set --node-name or NODE_NAME",
    );
  }
  if (!Number.isFinite(config.debounceMs) || config.debounceMs < 0) {
    throw new ConfigError(`Debounce must be zero or more milliseconds: ${config.debounceMs}`);
  }
  if (!Number.isFinite(config.resyncMs) || config.resyncMs < 1000) {
    throw new ConfigError(`Resync interval must be at least 1s: ${config.resyncMs}ms`);
  }
  if (!Number.isFinite(config.watchLivenessMs) || config.watchLivenessMs < 1000) {
    throw new ConfigError(
      `Watch liveness interval must be at least 1s: ${config.watchLivenessMs}ms`,
    );
  }
  if (config.metricsAddr && !/^(\[[0-9a-fA-F:.]+\]|[^:\s]+):\d{1,5}$/.test(config.metricsAddr)) {
    throw new ConfigError(`Metrics address must be host:port: "${config.metricsAddr}"`);
  }
  for (
    const [flag, key] of [
      ["network-annotation", config.networkAnnotation],
      ["network-id-annotation", config.networkIdAnnotation],
    ]
  ) {
    if (!/^([a-z0-9.-]+\/)?[A-Za-z0-9][-A-Za-z0-9_.]*$/.test(key)) {
      throw new ConfigError(`--${flag} is not a valid annotation key: "${key}"`);
    }
  }
  return config;
}
