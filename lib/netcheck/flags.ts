/**
 * `lace netcheck`'s command line: the flag table (the lead CLI's description
 * of the command), the parsers of its values, and the validation that turns
 * arguments into options or a one-line UsageError.
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
import { defaultNetcheckOptions, type NetcheckOptions } from "./options.ts";

const labelKey = /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const labelValue = /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/;
const dnsLabel = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** Checks options that cannot work; throws a UsageError naming the value. */
function validateNetcheckOptions(o: NetcheckOptions): NetcheckOptions {
  if (!dnsLabel.test(o.namespace) || o.namespace.length > 63) {
    throw new UsageError(`--namespace must be a DNS label: "${o.namespace}"`);
  }
  if (!o.image) throw new UsageError(`--image must not be empty`);
  if (!o.bandwidthImage) throw new UsageError(`--bandwidth-image must not be empty`);
  for (const [k, v] of Object.entries(o.selector)) {
    if (!labelKey.test(k) || !labelValue.test(v) || v.length > 63) {
      throw new UsageError(`--selector has an invalid label: "${k}=${v}"`);
    }
  }
  if (o.readyTimeoutMs <= 0) throw new UsageError(`--ready-timeout must be positive`);
  if (!Number.isInteger(o.connectTimeoutMs) || o.connectTimeoutMs < 100) {
    throw new UsageError(`--timeout must be at least 100ms: "${o.connectTimeoutMs}ms"`);
  }
  if (!Number.isInteger(o.bandwidthTimeS) || o.bandwidthTimeS < 1) {
    throw new UsageError(
      `--bandwidth-time must be whole seconds, at least 1s: "${o.bandwidthTimeS}s"`,
    );
  }
  if (!Number.isInteger(o.concurrency) || o.concurrency < 1 || o.concurrency > 1000) {
    throw new UsageError(`--concurrency must be between 1 and 1000: "${o.concurrency}"`);
  }
  if (!Number.isInteger(o.latencySamples) || o.latencySamples < 0 || o.latencySamples > 100) {
    throw new UsageError(`--latency-samples must be between 0 and 100: "${o.latencySamples}"`);
  }
  if (o.networks.length === 1) {
    throw new UsageError(`--networks needs at least two networks to compare: "${o.networks[0]}"`);
  }
  const seen = new Set<string>();
  for (const n of o.networks) {
    const eq = n.indexOf("=");
    const valid = eq < 0
      ? dnsLabel.test(n) && n.length <= 63
      : labelKey.test(n.slice(0, eq)) && labelValue.test(n.slice(eq + 1)) &&
        n.slice(eq + 1).length <= 63 && n.slice(eq + 1) !== "";
    if (!valid) {
      throw new UsageError(`--networks entries must be namespaces or key=value labels: "${n}"`);
    }
    if (seen.has(n)) throw new UsageError(`--networks names "${n}" twice`);
    seen.add(n);
  }
  if (o.watch && o.intervalMs < 1000) {
    throw new UsageError(`--interval must be at least 1s: "${o.intervalMs}ms"`);
  }
  if (o.watch && o.junit) {
    throw new UsageError(`--junit is for one run; --watch exports metrics instead`);
  }
  if (
    !Number.isInteger(o.metricsFailingPaths) || o.metricsFailingPaths < 0 ||
    o.metricsFailingPaths > 1000
  ) {
    throw new UsageError(
      `--metrics-failing-paths must be between 0 and 1000: "${o.metricsFailingPaths}"`,
    );
  }
  if (!Number.isInteger(o.sampleThreshold) || o.sampleThreshold < 2) {
    throw new UsageError(`--sample-threshold must be a whole number ≥ 2: "${o.sampleThreshold}"`);
  }
  if (!Number.isInteger(o.peers) || o.peers < 1) {
    throw new UsageError(`--peers must be a whole number ≥ 1: "${o.peers}"`);
  }
  if (!Number.isInteger(o.connectivityPeers) || o.connectivityPeers < 0) {
    throw new UsageError(
      `--connectivity-peers must be a whole number ≥ 0: "${o.connectivityPeers}"`,
    );
  }
  if (o.isolationTimeoutMs < 100) {
    throw new UsageError(`--isolation-timeout must be at least 100ms`);
  }
  if (!(o.maxLatencyMs >= 0)) throw new UsageError(`--max-latency must not be negative`);
  if (!(o.minBandwidthBps >= 0)) throw new UsageError(`--min-bandwidth must not be negative`);
  if (!(o.asymmetry >= 1)) {
    throw new UsageError(`--asymmetry must be a factor of at least 1: "${o.asymmetry}"`);
  }
  if (o.bandwidthRetries < 0) throw new UsageError(`bandwidthRetries must not be negative`);
  return o;
}

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
  return validateNetcheckOptions(options);
}
