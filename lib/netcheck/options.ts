/**
 * `lace netcheck` options: what each holds, the ports the probe pods listen
 * on, the defaults and the validation, separate from how the values arrive
 * (flags.ts), as lib/config.ts is for the agent.
 */
import type { LogSettings } from "../log/setup.ts";

export type IpFamily = "ipv4" | "ipv6";
import type { OutputFormat } from "../flags/output.ts";

export interface NetcheckOptions extends LogSettings {
  /** Kubeconfig file; empty means KUBECONFIG, then in-cluster. */
  kubeconfig: string;
  /** Namespace of the DaemonSet and the Lease; created when missing, never deleted. */
  namespace: string;
  /** Image of the `connect` container (agnhost). */
  image: string;
  /** Image of the `bandwidth` container (iperf3). */
  bandwidthImage: string;
  /** Extra node selector labels, on top of kubernetes.io/os=linux. */
  selector: Record<string, string>;
  readyTimeoutMs: number;
  ipFamily: IpFamily;
  /** agnhost connect timeout per path. */
  connectTimeoutMs: number;
  /** iperf3 duration per path, whole seconds (iperf3 takes integers). */
  bandwidthTimeS: number;
  /** Requests per path timed for latency (each on a new connection); 0 skips latency. */
  latencySamples: number;
  /** Paths whose connect or request p99 is above this many ms fail; 0 disables. */
  maxLatencyMs: number;
  /**
   * Networks to place probe pods in and check isolation between: each a
   * namespace the network plugin maps to a network, or a `key=value` pod
   * label it reads. Empty: the one network of --namespace.
   */
  networks: string[];
  /** How long a cross-network request waits for an answer (no answer = isolated). */
  isolationTimeoutMs: number;
  /** Keep the probe pods and run a round every --interval until stopped. */
  watch: boolean;
  /** --watch: time from the start of one round to the start of the next, ms. */
  intervalMs: number;
  /** --watch: serve Prometheus metrics on this host:port; empty for none. */
  metricsAddress: string;
  /** --watch: at most this many failing paths get a series of their own. */
  metricsFailingPaths: number;
  /** Above this many nodes, bandwidth tests `peers` peers per node a round, rotating. */
  sampleThreshold: number;
  /** Peers per node and round for sampled bandwidth (every pair within ⌈(N−1)/k⌉ rounds). */
  peers: number;
  /**
   * Peers per node and round for connectivity and latency; 0: all pairs, and
   * with --watch as many as fit half the interval once all pairs no longer do.
   */
  connectivityPeers: number;
  /** Check every path for an MTU black hole (growing TCP payloads, the MSS, full-size UDP). */
  mtu: boolean;
  /** Test UDP reachability per path (agnhost connect --protocol=udp to netexec's UDP server). */
  udp: boolean;
  /** Skip the bandwidth phase. */
  skipBandwidth: boolean;
  concurrency: number;
  /** Paths below this many bits per second fail; 0 disables. */
  minBandwidthBps: number;
  /** Flag A→B / B→A pairs whose bandwidth differs by more than this factor. */
  asymmetry: number;
  output: OutputFormat;
  /** JUnit XML file; empty means none. */
  junit: string;
  /** Retries of an iperf3 run refused as busy or reset. */
  bandwidthRetries: number;
  /** Lease duration; the lease is renewed every third of it. */
  leaseDurationS: number;
  /** Shows a progress bar on a terminal; false forces plain lines. */
  progress: boolean;
  /**
   * A ConfigMap in --namespace that owns the probe DaemonSets and the Lease made there, so the
   * garbage collector deletes them with it; empty for none.
   */
  ownerConfigMap: string;
}

export const CONNECT_PORT = 1199;
/** agnhost netexec's UDP port with --udp (it answers a "hostname" datagram). */
export const UDP_PORT = 1200;
export const IPERF_PORT = 5201;
const DEFAULT_AGNHOST_IMAGE = "registry.k8s.io/e2e-test-images/agnhost:2.53";
const DEFAULT_IPERF_IMAGE = "networkstatic/iperf3:multiarch";

/** The defaults of every option. */
export function defaultNetcheckOptions(): NetcheckOptions {
  return {
    kubeconfig: "",
    namespace: "lace-system",
    image: DEFAULT_AGNHOST_IMAGE,
    bandwidthImage: DEFAULT_IPERF_IMAGE,
    selector: {},
    readyTimeoutMs: 120_000,
    ipFamily: "ipv4",
    connectTimeoutMs: 5_000,
    bandwidthTimeS: 3,
    latencySamples: 10,
    networks: [],
    watch: false,
    intervalMs: 300_000,
    metricsAddress: "127.0.0.1:9469",
    metricsFailingPaths: 50,
    sampleThreshold: 100,
    peers: 8,
    connectivityPeers: 0,
    mtu: false,
    udp: false,
    isolationTimeoutMs: 1_000,
    maxLatencyMs: 0,
    skipBandwidth: false,
    concurrency: 16,
    minBandwidthBps: 0,
    asymmetry: 2,
    output: "text",
    junit: "",
    bandwidthRetries: 3,
    leaseDurationS: 60,
    progress: true,
    ownerConfigMap: "",
    // Quiet beside the report and the progress lines: what went wrong, not each step.
    logLevel: "warning",
    logFormat: "auto",
  };
}

const labelKey = /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const labelValue = /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/;
const dnsLabel = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** Options that cannot work; the message names the flag and the value. */
export class OptionsError extends Error {
  override name = "OptionsError";
}

/**
 * Checks options that cannot work; throws an OptionsError naming the first
 * bad value (one line, for the command line).
 */
export function validateNetcheckOptions(o: NetcheckOptions): NetcheckOptions {
  if (!dnsLabel.test(o.namespace) || o.namespace.length > 63) {
    throw new OptionsError(`--namespace must be a DNS label: "${o.namespace}"`);
  }
  if (!o.image) throw new OptionsError(`--image must not be empty`);
  if (!o.bandwidthImage) throw new OptionsError(`--bandwidth-image must not be empty`);
  for (const [k, v] of Object.entries(o.selector)) {
    if (!labelKey.test(k) || !labelValue.test(v) || v.length > 63) {
      throw new OptionsError(`--selector has an invalid label: "${k}=${v}"`);
    }
  }
  if (o.readyTimeoutMs <= 0) throw new OptionsError(`--ready-timeout must be positive`);
  if (!Number.isInteger(o.connectTimeoutMs) || o.connectTimeoutMs < 100) {
    throw new OptionsError(`--timeout must be at least 100ms: "${o.connectTimeoutMs}ms"`);
  }
  if (!Number.isInteger(o.bandwidthTimeS) || o.bandwidthTimeS < 1) {
    throw new OptionsError(
      `--bandwidth-time must be whole seconds, at least 1s: "${o.bandwidthTimeS}s"`,
    );
  }
  if (!Number.isInteger(o.concurrency) || o.concurrency < 1 || o.concurrency > 1000) {
    throw new OptionsError(`--concurrency must be between 1 and 1000: "${o.concurrency}"`);
  }
  if (!Number.isInteger(o.latencySamples) || o.latencySamples < 0 || o.latencySamples > 100) {
    throw new OptionsError(`--latency-samples must be between 0 and 100: "${o.latencySamples}"`);
  }
  if (o.networks.length === 1) {
    throw new OptionsError(`--networks needs at least two networks to compare: "${o.networks[0]}"`);
  }
  const seen = new Set<string>();
  for (const n of o.networks) {
    const eq = n.indexOf("=");
    const valid = eq < 0
      ? dnsLabel.test(n) && n.length <= 63
      : labelKey.test(n.slice(0, eq)) && labelValue.test(n.slice(eq + 1)) &&
        n.slice(eq + 1).length <= 63 && n.slice(eq + 1) !== "";
    if (!valid) {
      throw new OptionsError(`--networks entries must be namespaces or key=value labels: "${n}"`);
    }
    if (seen.has(n)) throw new OptionsError(`--networks names "${n}" twice`);
    seen.add(n);
  }
  if (o.watch && o.intervalMs < 1000) {
    throw new OptionsError(`--interval must be at least 1s: "${o.intervalMs}ms"`);
  }
  if (o.watch && o.junit) {
    throw new OptionsError(`--junit is for one run; --watch exports metrics instead`);
  }
  if (
    !Number.isInteger(o.metricsFailingPaths) || o.metricsFailingPaths < 0 ||
    o.metricsFailingPaths > 1000
  ) {
    throw new OptionsError(
      `--metrics-failing-paths must be between 0 and 1000: "${o.metricsFailingPaths}"`,
    );
  }
  if (!Number.isInteger(o.sampleThreshold) || o.sampleThreshold < 2) {
    throw new OptionsError(`--sample-threshold must be a whole number ≥ 2: "${o.sampleThreshold}"`);
  }
  if (!Number.isInteger(o.peers) || o.peers < 1) {
    throw new OptionsError(`--peers must be a whole number ≥ 1: "${o.peers}"`);
  }
  if (!Number.isInteger(o.connectivityPeers) || o.connectivityPeers < 0) {
    throw new OptionsError(
      `--connectivity-peers must be a whole number ≥ 0: "${o.connectivityPeers}"`,
    );
  }
  if (o.isolationTimeoutMs < 100) {
    throw new OptionsError(`--isolation-timeout must be at least 100ms`);
  }
  if (!(o.maxLatencyMs >= 0)) throw new OptionsError(`--max-latency must not be negative`);
  if (!(o.minBandwidthBps >= 0)) throw new OptionsError(`--min-bandwidth must not be negative`);
  if (!(o.asymmetry >= 1)) {
    throw new OptionsError(`--asymmetry must be a factor of at least 1: "${o.asymmetry}"`);
  }
  if (o.bandwidthRetries < 0) throw new OptionsError(`bandwidthRetries must not be negative`);
  return o;
}
