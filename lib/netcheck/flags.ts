/**
 * `lace netcheck`'s command line: the flag table (the lead CLI's description
 * of the command) and the parsers of its values. What values can work is
 * options.ts's to say; a bad one is a one-line UsageError here.
 */
import {
  boolean,
  type CommandSpec,
  duration,
  integer,
  oneOf,
  parseFlags,
  text,
  UsageError,
  type ValueParser,
} from "../flags/parser.ts";
import { outputFlags } from "../flags/output.ts";
import { logFlags } from "../flags/log.ts";
import {
  defaultNetcheckOptions,
  type NetcheckOptions,
  OptionsError,
  validateNetcheckOptions,
} from "./options.ts";

/** Parses "key=value[,key=value]" into labels. */
function parseSelector(text: string): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const part of text.split(",").map((s) => s.trim()).filter(Boolean)) {
    const eq = part.indexOf("=");
    if (eq <= 0) throw new TypeError(`must be key=value[,key=value]: "${text}"`);
    labels[part.slice(0, eq).trim()] = part.slice(eq + 1).trim();
  }
  return labels;
}

/** Parses "500M", "1.5G", "100k", "2000000" (bits per second, decimal units) into a number. */
export function parseBandwidth(text: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*([kKmMgGtT]?)(?:bit\/s|bps|b)?$/.exec(text.trim());
  if (!m) {
    throw new TypeError(`must be bits per second like 500M or 1G: "${text}"`);
  }
  const unit = { "": 1, k: 1e3, m: 1e6, g: 1e9, t: 1e12 }[m[2].toLowerCase() as "" | "k"];
  return Number(m[1]) * unit;
}

/** Reads a whole number of seconds from a duration (iperf3 takes integers). */
const wholeSeconds: ValueParser<number> = {
  metavar: "DURATION",
  parse(t) {
    const ms = duration.parse(t);
    if (ms % 1000 !== 0) throw new Error(`must be whole seconds: "${t}"`);
    return ms / 1000;
  },
  format: (s) => duration.format(s * 1000),
};

const selector: ValueParser<Record<string, string>> = {
  metavar: "K=V[,K=V]",
  parse: parseSelector,
  format: (labels) => Object.entries(labels).map(([k, v]) => `${k}=${v}`).join(","),
};

const networkList: ValueParser<string[]> = {
  metavar: "NS|K=V[,…]",
  parse: (t) => t.split(",").map((s) => s.trim()).filter(Boolean),
  format: (list) => list.join(","),
};

const bandwidth: ValueParser<number> = {
  metavar: "BPS",
  parse: parseBandwidth,
  format: String,
};

const factor: ValueParser<number> = {
  metavar: "FACTOR",
  parse(t) {
    const n = Number(t);
    if (t.trim() === "" || !Number.isFinite(n)) throw new Error(`must be a number: "${t}"`);
    return n;
  },
  format: String,
};

/** The flags of `lace netcheck`; defaults come from defaultNetcheckOptions(). */
export const netcheckCommand: CommandSpec<NetcheckOptions> = {
  name: "netcheck",
  summary: "Test TCP connectivity and bandwidth between every pair of nodes of the cluster",
  usage: "lace netcheck [flags]",
  defaults: defaultNetcheckOptions,
  flags: [
    {
      name: "kubeconfig",
      key: "kubeconfig",
      value: text,
      metavar: "FILE",
      help: "Kubeconfig file (current context); else KUBECONFIG, in-cluster, ~/.kube/config",
    },
    {
      name: "namespace",
      key: "namespace",
      value: text,
      metavar: "NAME",
      help: "Namespace of the probe DaemonSet and lock Lease (created if missing)",
    },
    {
      name: "image",
      key: "image",
      value: text,
      metavar: "IMAGE",
      help: "agnhost image of the connect container",
    },
    {
      name: "bandwidth-image",
      key: "bandwidthImage",
      value: text,
      metavar: "IMAGE",
      help: "iperf3 image of the bandwidth container",
    },
    { name: "selector", key: "selector", value: selector, help: "Only nodes with these labels" },
    {
      name: "ready-timeout",
      key: "readyTimeoutMs",
      value: duration,
      help: "How long to wait for the probe pods",
    },
    {
      name: "ip-family",
      key: "ipFamily",
      value: oneOf(["ipv4", "ipv6"] as const),
      help: "Address family of the tested paths",
    },
    {
      name: "timeout",
      key: "connectTimeoutMs",
      value: duration,
      help: "TCP connect timeout per path",
    },
    {
      name: "bandwidth-time",
      key: "bandwidthTimeS",
      value: wholeSeconds,
      help: "iperf3 duration per path (whole seconds, at least 1s)",
    },
    {
      name: "latency-samples",
      key: "latencySamples",
      value: integer,
      help:
        "Requests per path timed inside the probe pod (connect and request p50/p99/max); 0 skips",
    },
    {
      name: "max-latency",
      key: "maxLatencyMs",
      value: duration,
      help: "Fail paths whose connect or request p99 is above this (e.g. 5ms); 0 disables",
    },
    {
      name: "networks",
      key: "networks",
      value: networkList,
      help: "Probe pods in each of these networks (namespace or key=value label) and check " +
        "that no cross-network path is answered by the other network's pod",
    },
    {
      name: "isolation-timeout",
      key: "isolationTimeoutMs",
      value: duration,
      help: "How long a cross-network request waits for an answer (none means isolated)",
    },
    {
      name: "watch",
      key: "watch",
      value: boolean,
      help: "Keep the probe pods and run a round every --interval until stopped (Ctrl-C, SIGTERM)",
    },
    {
      name: "interval",
      key: "intervalMs",
      value: duration,
      help: "--watch: from the start of one round to the next (rounds never overlap)",
    },
    {
      name: "metrics-address",
      key: "metricsAddress",
      value: text,
      metavar: "HOST:PORT",
      help: "--watch: serve Prometheus metrics at http://HOST:PORT/metrics; empty for none",
    },
    {
      name: "owner-configmap",
      key: "ownerConfigMap",
      value: text,
      metavar: "NAME",
      help: "A ConfigMap in --namespace owning the DaemonSets and Lease made there: deleting it " +
        "deletes them (the chart's, for when the runner cannot clean up)",
    },
    {
      name: "metrics-failing-paths",
      key: "metricsFailingPaths",
      value: integer,
      help: "--watch: failing paths that get a series of their own (the rest are counted)",
    },
    {
      name: "sample-threshold",
      key: "sampleThreshold",
      value: integer,
      help: "Above this many nodes, bandwidth tests --peers peers per node a round (rotating)",
    },
    {
      name: "peers",
      key: "peers",
      value: integer,
      help: "Peers per node and round when sampling (every pair within ⌈(N−1)/k⌉ rounds)",
    },
    {
      name: "connectivity-peers",
      key: "connectivityPeers",
      value: integer,
      help: "Peers per node for connect and latency; 0: all pairs (--watch: while they fit)",
    },
    {
      name: "mtu",
      key: "mtu",
      value: boolean,
      help:
        "Check each path for an MTU black hole: small payloads pass, full-size ones (segments of the connection's MSS, UDP datagrams filling the pod MTU) vanish",
    },
    {
      name: "udp",
      key: "udp",
      value: boolean,
      help: "Also test UDP reachability per path (a datagram to the target's agnhost, answered)",
    },
    {
      name: "skip-bandwidth",
      key: "skipBandwidth",
      value: boolean,
      help: "Test connectivity only",
    },
    {
      name: "concurrency",
      key: "concurrency",
      value: integer,
      help: "Exec sessions in parallel",
    },
    {
      name: "min-bandwidth",
      key: "minBandwidthBps",
      value: bandwidth,
      help: "Fail paths slower than this many bits/s (e.g. 500M); 0 disables",
    },
    {
      name: "asymmetry",
      key: "asymmetry",
      value: factor,
      help: "Flag A→B vs B→A bandwidth differing by more than this factor",
    },
    ...outputFlags<NetcheckOptions>(),
    {
      name: "junit",
      key: "junit",
      value: text,
      metavar: "FILE",
      help: "Also write a JUnit XML report with every path",
    },
    {
      name: "progress",
      key: "progress",
      value: boolean,
      help: "Show a progress bar on a terminal (--no-progress for progress lines only)",
    },
    ...logFlags<NetcheckOptions>(),
  ],
};

/**
 * Parses `lace netcheck` arguments (flag > env > default) into validated
 * options. Bad input throws a UsageError with a one-line message. Returns
 * null when help was asked.
 */
export function parseNetcheckArgs(
  args: string[],
  env: Record<string, string | undefined>,
): NetcheckOptions | null {
  const { options, help } = parseFlags(netcheckCommand, args, env);
  if (help) return null;
  try {
    return validateNetcheckOptions(options);
  } catch (e) {
    if (e instanceof OptionsError) throw new UsageError(e.message, { cause: e });
    throw e;
  }
}
