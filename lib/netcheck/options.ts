/**
 * `lace netcheck` options: what each holds, the ports the probe pods listen
 * on, and the defaults. How the values arrive and are checked is flags.ts.
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
  /** Check every path for an MTU black hole (TCP payloads to 16000 B, MSS, 1 MiB; full-size UDP). */
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
