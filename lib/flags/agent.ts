/**
 * The flags of `lace agent` (and the ones other commands share with it): the
 * one place that says which flag and environment variable set which Config
 * key and how its text is read. Defaults come from `defaultConfig()`;
 * validation is `validateConfig()`. To add a setting: a Config key and its
 * default in config.ts (and its check in `configProblems`), then one entry here.
 */
import {
  type Config,
  ConfigError,
  defaultConfig,
  nodeProblems,
  type NodeSettings,
  validateConfig,
} from "../config.ts";
import {
  boolean,
  type CommandSpec,
  duration,
  type Flag,
  type FlagSpec,
  integer,
  mark,
  oneOf,
  parseCommand,
  text,
  trueFalse,
  UsageError,
  type ValueParser,
} from "./parser.ts";
import { logFlags } from "./log.ts";
import { CONFLICT_POLICIES } from "../rules/conflicts.ts";
import { CNI_CHAINING_MODES } from "../config.ts";
import { CONTAINER_RUNTIME_MODES } from "../cni/chaining/runtimes.ts";
import { type ChainTarget, parseChainTargets } from "../cni/chaining/select.ts";
import { ADDRESS_SHARING } from "../rules/address_sharing.ts";
import { parseCidr } from "../net/cidr.ts";

/** A comma-separated list of CIDRs, each checked; empty text is no range. */
const cidrList: ValueParser<string[]> = {
  metavar: "CIDRS",
  parse: (t) => {
    const cidrs = t.split(",").map((c) => c.trim()).filter(Boolean);
    for (const c of cidrs) parseCidr(c);
    return cidrs;
  },
  format: (v) => v.join(","),
};

/**
 * Parses a command that touches the node's BPF state, as `parseCommand`
 * does, then checks its node settings: every problem at once, in one UsageError.
 */
export function parseNodeCommand<O extends Partial<NodeSettings>>(
  command: CommandSpec<O>,
  args: string[],
): O | null {
  const options = parseCommand(command, args);
  if (options === null) return null;
  const problems = nodeProblems(options);
  if (problems.length > 0) throw new UsageError(problems.join("\n"));
  return options;
}

/** `--cni-chain-files`: names or globs, each with an optional NETWORK:ID. */
const chainTargets: ValueParser<ChainTarget[]> = {
  metavar: "FILES",
  parse: parseChainTargets,
  format: (v) =>
    v.map((t) => t.network === undefined ? t.pattern : `${t.pattern}=${t.network}:${t.networkId}`)
      .join(","),
};

/** Flags every command that touches the node's BPF state understands, by the key they set. */
export const nodeFlags = {
  podsDir: {
    name: "pods-dir",
    key: "podsDir",
    value: text,
    env: ["LACE_PODS_DIR"],
    metavar: "DIR",
    help: "Directory of Pod manifests (YAML or JSON) to use as a pod source",
  },
  pinPath: {
    name: "pin-path",
    key: "pinPath",
    value: text,
    env: ["LACE_PIN_PATH"],
    metavar: "DIR",
    help: "bpffs directory holding Lace's pinned maps and links",
  },
  kubeletCgroup: {
    name: "kubelet-cgroup",
    key: "kubeletCgroup",
    value: text,
    env: ["LACE_KUBELET_CGROUP"],
    metavar: "PATH|auto",
    help: "cgroup v2 directory of the kubelet, or auto to find the kubelet in /proc",
  },
  hostCgroupRoot: {
    name: "host-cgroup-root",
    key: "hostCgroupRoot",
    value: text,
    env: ["LACE_HOST_CGROUP_ROOT"],
    metavar: "DIR",
    help: "Prefix where the host's filesystem is mounted (e.g. /host in a container)",
  },
  metricsAddr: {
    name: "metrics-addr",
    key: "metricsAddr",
    value: text,
    env: ["LACE_METRICS_ADDR"],
    metavar: "HOST:PORT",
    help: "Address of the metrics and health server (/metrics, /healthz, /readyz only)",
  },
  agentSocket: {
    name: "agent-socket",
    key: "agentSocket",
    value: text,
    env: ["LACE_AGENT_SOCKET"],
    metavar: "PATH",
    help: "Root-only unix socket of the agent's local view, /targets included (empty disables it)",
  },
  cniConfDir: {
    name: "cni-conf-dir",
    key: "cniConfDir",
    value: text,
    env: ["LACE_CNI_CONF_DIR"],
    metavar: "DIR",
    help: "The container runtime's CNI configuration directory (as the agent sees it)",
  },
  cniStateDir: {
    name: "cni-state-dir",
    key: "cniStateDir",
    value: text,
    env: ["LACE_CNI_STATE_DIR"],
    metavar: "DIR",
    help:
      "Root-only host directory where the agent keeps the files' bytes from before chaining (for a byte-exact restore) and its chaining lock",
  },
  cniBinDir: {
    name: "cni-bin-dir",
    key: "cniBinDir",
    value: text,
    env: ["LACE_CNI_BIN_DIR"],
    metavar: "DIR",
    help:
      "The container runtime's CNI bin directory (as the agent sees it): the lace plugin must be there, root's and executable, before the agent chains it",
  },
} as const satisfies { [K in keyof NodeSettings]: Flag<NodeSettings, K> };

export const agentFlags: readonly FlagSpec<Config>[] = [
  {
    name: "node-name",
    key: "nodeName",
    value: text,
    env: ["LACE_NODE_NAME", "NODE_NAME"],
    metavar: "NAME",
    help: "This node's name: only pods bound to it are considered",
  },
  {
    name: "kubeconfig",
    key: "kubeconfig",
    value: text,
    env: ["LACE_KUBECONFIG", "KUBECONFIG"],
    metavar: "FILE",
    help: "Kubeconfig file (default: in-cluster service account)",
  },
  {
    name: "kube-api",
    key: "useApi",
    value: boolean,
    env: ["LACE_KUBE_API"],
    help: "Watch pods through the Kubernetes API (--no-kube-api for the directory source alone)",
  },
  nodeFlags.podsDir,
  nodeFlags.pinPath,
  nodeFlags.kubeletCgroup,
  nodeFlags.hostCgroupRoot,
  nodeFlags.metricsAddr,
  {
    name: "health-addr",
    key: "healthAddr",
    value: text,
    env: ["LACE_HEALTH_ADDR"],
    metavar: "HOST:PORT",
    help:
      "Loopback address serving /healthz and /readyz only, for the kubelet's probes (empty disables it)",
  },
  nodeFlags.agentSocket,
  {
    name: "probe-mark",
    key: "probeMark",
    value: mark,
    env: ["LACE_PROBE_MARK"],
    help: "Probe flag bit(s) of the socket mark",
  },
  {
    name: "mark-shift",
    key: "markShift",
    value: integer,
    env: ["LACE_MARK_SHIFT"],
    help: "Left shift of the network id in the socket mark",
  },
  {
    name: "network-annotation",
    key: "networkAnnotation",
    value: text,
    env: ["LACE_NETWORK_ANNOTATION"],
    metavar: "KEY",
    help: "Pod annotation naming the pod's Lace network",
  },
  {
    name: "network-id-annotation",
    key: "networkIdAnnotation",
    value: text,
    env: ["LACE_NETWORK_ID_ANNOTATION"],
    metavar: "KEY",
    help: "Pod annotation holding the pod's network id (1..65535)",
  },
  {
    name: "debounce",
    key: "debounceMs",
    value: duration,
    env: ["LACE_DEBOUNCE"],
    help:
      "Shortest time between two reconciles; pod events within it are gathered into one (up to 1m)",
  },
  {
    name: "resync-interval",
    key: "resyncMs",
    value: duration,
    env: ["LACE_RESYNC_INTERVAL"],
    help: "Full resync that repairs drift in the probe map (1s..24h)",
  },
  {
    name: "watch-liveness",
    key: "watchLivenessMs",
    value: duration,
    env: ["LACE_WATCH_LIVENESS"],
    help:
      "A pod watch silent this long gets the API server probed; a dead watch is restarted (1s..1h)",
  },
  {
    name: "cni-socket",
    key: "cniSocket",
    value: text,
    env: ["LACE_CNI_SOCKET"],
    metavar: "PATH",
    help: "Unix socket the CNI plugin registers attachments on (empty disables it)",
  },
  {
    name: "cni-chaining",
    key: "cniChaining",
    value: oneOf(CNI_CHAINING_MODES),
    env: ["LACE_CNI_CHAINING"],
    metavar: "MODE",
    help:
      "auto: chain the lace plugin into the node's CNI configuration and keep it there (needs --cni-socket); manual: leave the configuration to the operator, and restore files the agent chained before",
  },
  nodeFlags.cniConfDir,
  nodeFlags.cniStateDir,
  nodeFlags.cniBinDir,
  {
    name: "container-runtime",
    key: "containerRuntime",
    value: oneOf(CONTAINER_RUNTIME_MODES),
    env: ["LACE_CONTAINER_RUNTIME"],
    metavar: "RUNTIME",
    help:
      "Whose rule picks the CNI file the runtime uses: containerd (the first in byte order, or none when it is invalid), crio (the first it can load), auto (the Node's containerRuntimeVersion; unknown: crio's rule)",
  },
  {
    name: "cni-chain-files",
    key: "cniChainFiles",
    value: chainTargets,
    env: ["LACE_CNI_CHAIN_FILES"],
    help:
      "Files of --cni-conf-dir to chain into, comma-separated names or globs, each optionally =NETWORK:ID (default: the one the runtime uses, see --container-runtime)",
  },
  {
    name: "daemonset",
    key: "daemonSet",
    value: text,
    env: ["LACE_DAEMONSET"],
    metavar: "NAMESPACE/NAME",
    help:
      "The agent's DaemonSet: when it is gone or being deleted at shutdown (helm uninstall), the agent restores the CNI files it chained; otherwise the chain stays",
  },
  {
    name: "max-targets-per-pod",
    key: "maxTargetsPerPod",
    value: integer,
    env: ["LACE_MAX_TARGETS_PER_POD"],
    metavar: "N",
    help:
      "The most probe targets one pod may have in the probe map (1..65536); a pod that wants more is reported",
  },
  {
    name: "lifecycle-hooks",
    key: "lifecycleHooks",
    value: trueFalse,
    env: ["LACE_LIFECYCLE_HOOKS"],
    help:
      "true: the ports of postStart and preStop httpGet hooks are probe targets under the probes' rules; false: hook requests go to the host's network",
  },
  {
    name: "pod-cidrs",
    key: "podCidrs",
    value: cidrList,
    env: ["LACE_POD_CIDRS"],
    metavar: "CIDRS",
    help:
      "Pod address ranges of Lace networks, comma-separated (e.g. 10.244.0.0/16,fd00:10:244::/56): a pod address outside all of them gets no probe targets and a CNI ADD bringing one is refused (it may be an address the kubelet itself connects to); a kubelet connect into one that matches no probe target is counted and reported. Empty: addresses are not checked (warned at start)",
  },
  {
    name: "address-conflict",
    key: "addressConflict",
    value: oneOf(CONFLICT_POLICIES),
    env: ["LACE_ADDRESS_CONFLICT"],
    metavar: "POLICY",
    help:
      "A probe address and port claimed by pods of two networks: fail-closed tags it for neither, older-wins keeps the older pod's (single-tenant clusters only). Decides only under --address-sharing=shared, or for a key the later pod of a clash also probes",
  },
  {
    name: "address-sharing",
    key: "addressSharing",
    value: oneOf(ADDRESS_SHARING),
    env: ["LACE_ADDRESS_SHARING"],
    metavar: "POLICY",
    help:
      "Pods of two networks at one address on this node: exclusive refuses the later pod's CNI ADD, or tags none of its probes at that address; shared allows it, for networks that trust each other only (a pod can then redirect the kubelet's probes into another network at its address)",
  },
  ...logFlags<Config>(),
];

/** The command line of `lace agent`. */
export const agentCommand: CommandSpec<Config> = {
  name: "agent",
  summary: [
    "Run the node agent: watch this node's pods (Kubernetes API and/or a directory of manifests),",
    "keep the pinned probe map in sync, keep the connect programs attached to the kubelet's",
    "cgroup, and serve metrics and health. On SIGTERM it stops and leaves the program, links and",
    "map pinned, so probes keep working until the next agent takes over.",
  ].join("\n"),
  usage: "lace agent [flags]",
  flags: agentFlags,
  defaults: defaultConfig,
};

/** Validates the agent's parsed Config; every bad value is reported in one UsageError. */
export function agentConfig(config: Config): Config {
  try {
    return validateConfig(config);
  } catch (e) {
    if (e instanceof ConfigError) throw new UsageError(e.message, { cause: e });
    throw e;
  }
}
