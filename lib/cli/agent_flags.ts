/**
 * The flags of `lace agent` (and the ones other commands share with it), and
 * their translation into a validated Config.
 */
import {
  type Config,
  ConfigError,
  DEFAULT_KUBELET_CGROUP,
  defaultConfig,
  LOG_LEVELS,
  validateConfig,
} from "../config.ts";
import { type FlagSpec, type FlagValues, UsageError } from "./flags.ts";

const d = defaultConfig();

/** Flags every command that touches the node's BPF state understands. */
export const nodeFlags: FlagSpec[] = [
  {
    name: "pin-path",
    type: "string",
    env: ["LACE_PIN_PATH"],
    default: d.pinPath,
    metavar: "DIR",
    help: "bpffs directory holding Lace's pinned maps and links",
  },
  {
    name: "kubelet-cgroup",
    type: "string",
    env: ["LACE_KUBELET_CGROUP"],
    default: DEFAULT_KUBELET_CGROUP,
    metavar: "PATH|auto",
    help: "cgroup v2 directory of the kubelet, or auto to find the kubelet in /proc",
  },
  {
    name: "host-cgroup-root",
    type: "string",
    env: ["LACE_HOST_CGROUP_ROOT"],
    default: "",
    metavar: "DIR",
    help: "Prefix where the host's filesystem is mounted (e.g. /host in a container)",
  },
  {
    name: "metrics-addr",
    type: "string",
    env: ["LACE_METRICS_ADDR"],
    default: d.metricsAddr,
    metavar: "HOST:PORT",
    help: "Address of the metrics and health server (/metrics, /healthz, /readyz, /targets)",
  },
];

export const logFlags: FlagSpec[] = [
  {
    name: "log-level",
    type: "string",
    env: ["LACE_LOG_LEVEL"],
    default: d.logLevel,
    choices: LOG_LEVELS,
    help: "Minimum level logged",
  },
  {
    name: "log-format",
    type: "string",
    env: ["LACE_LOG_FORMAT"],
    default: d.logFormat,
    choices: ["auto", "json", "text"],
    help: "auto: text on a terminal, JSON lines otherwise",
  },
];

export const agentFlags: FlagSpec[] = [
  {
    name: "node-name",
    type: "string",
    env: ["LACE_NODE_NAME", "NODE_NAME"],
    default: "",
    metavar: "NAME",
    help: "This node's name: only pods bound to it are considered",
  },
  {
    name: "kubeconfig",
    type: "string",
    env: ["LACE_KUBECONFIG", "KUBECONFIG"],
    default: "",
    metavar: "FILE",
    help: "Kubeconfig file (default: in-cluster service account)",
  },
  {
    name: "kube-api",
    type: "boolean",
    env: ["LACE_KUBE_API"],
    default: true,
    help: "Watch pods through the Kubernetes API (--no-kube-api for the directory source alone)",
  },
  {
    name: "pods-dir",
    type: "string",
    env: ["LACE_PODS_DIR"],
    default: "",
    metavar: "DIR",
    help: "Directory of Pod manifests (YAML or JSON) to use as a pod source",
  },
  ...nodeFlags,
  {
    name: "probe-mark",
    type: "mark",
    env: ["LACE_PROBE_MARK"],
    default: d.probeMark,
    metavar: "MARK",
    help: "Probe flag bit(s) of the socket mark",
  },
  {
    name: "mark-shift",
    type: "int",
    env: ["LACE_MARK_SHIFT"],
    default: d.markShift,
    metavar: "N",
    help: "Left shift of the network id in the socket mark",
  },
  {
    name: "network-annotation",
    type: "string",
    env: ["LACE_NETWORK_ANNOTATION"],
    default: d.networkAnnotation,
    metavar: "KEY",
    help: "Pod annotation naming the pod's Lace network",
  },
  {
    name: "network-id-annotation",
    type: "string",
    env: ["LACE_NETWORK_ID_ANNOTATION"],
    default: d.networkIdAnnotation,
    metavar: "KEY",
    help: "Pod annotation holding the pod's network id (1..65535)",
  },
  {
    name: "debounce",
    type: "duration",
    env: ["LACE_DEBOUNCE"],
    default: `${d.debounceMs}ms`,
    help: "Delay that gathers a burst of pod events into one reconcile",
  },
  {
    name: "resync-interval",
    type: "duration",
    env: ["LACE_RESYNC_INTERVAL"],
    default: "5m",
    help: "Full resync that repairs drift in the probe map",
  },
  {
    name: "watch-liveness",
    type: "duration",
    env: ["LACE_WATCH_LIVENESS"],
    default: "30s",
    help: "A pod watch silent this long gets the API server probed; a dead watch is restarted",
  },
  {
    name: "cni-socket",
    type: "string",
    env: ["LACE_CNI_SOCKET"],
    default: d.cniSocket,
    metavar: "PATH",
    help: "Unix socket the CNI plugin registers attachments on (empty disables it)",
  },
  ...logFlags,
];

/** Builds and validates the agent's Config; a bad combination is a UsageError. */
export function agentConfig(values: FlagValues): Config {
  const config: Config = {
    ...defaultConfig(),
    nodeName: values["node-name"] as string,
    kubeconfig: values["kubeconfig"] as string,
    useApi: values["kube-api"] as boolean,
    podsDir: values["pods-dir"] as string,
    pinPath: values["pin-path"] as string,
    kubeletCgroup: values["kubelet-cgroup"] as string,
    hostCgroupRoot: values["host-cgroup-root"] as string,
    probeMark: values["probe-mark"] as number,
    markShift: values["mark-shift"] as number,
    networkAnnotation: values["network-annotation"] as string,
    networkIdAnnotation: values["network-id-annotation"] as string,
    debounceMs: values["debounce"] as number,
    resyncMs: values["resync-interval"] as number,
    watchLivenessMs: values["watch-liveness"] as number,
    metricsAddr: values["metrics-addr"] as string,
    cniSocket: values["cni-socket"] as string,
    logLevel: values["log-level"] as Config["logLevel"],
    logFormat: values["log-format"] as Config["logFormat"],
  };
  try {
    return validateConfig(config);
  } catch (e) {
    if (e instanceof ConfigError) throw new UsageError(e.message);
    throw e;
  }
}
