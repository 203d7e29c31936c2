/**
 * Prometheus metrics of `lace netcheck --watch`, of bounded cardinality.
 * goldpinger and kubenurse export a series per pair of nodes, N² series that
 * grow with the cluster; here the number of series is at most
 *
 *   FIXED + 2·N + M·(PER_NETWORK) + M·(M−1) + maxFailingPaths
 *
 * for N nodes and M networks (seriesBound()): per node (paths failed from and
 * to it in the last round), per network (latency and bandwidth histograms,
 * path counters by phase and result), per pair of networks (leaks), and per
 * pair of nodes only for the paths failing in the last round, at most
 * `maxFailingPaths` of them (the rest counted in one gauge). Every per-round
 * gauge is reset at the end of a round, so a node that left and a path that
 * recovered lose their series.
 */
import type { Counter, Gauge, Histogram, Registry } from "prom-client";
// From their own files, as lib/agent/metrics.ts does: prom-client's index loads its push
// gateway, default metrics and cluster aggregator too.
import counterClass from "prom-client/lib/counter.js";
import gaugeClass from "prom-client/lib/gauge.js";
import histogramClass from "prom-client/lib/histogram.js";
import registryClass from "prom-client/lib/registry.js";
import { registerProcessMetrics } from "../../os/process_metrics.ts";
import type { PathResult, Phase } from "../checks/path_result.ts";

const CounterClass = counterClass as typeof Counter;
const GaugeClass = gaugeClass as typeof Gauge;
const HistogramClass = histogramClass as typeof Histogram;
const RegistryClass = registryClass as typeof Registry;

const PHASES: Phase[] = ["connect", "udp", "latency", "mtu", "bandwidth", "isolation"];
/** Seconds: 50 µs to 1 s. */
export const LATENCY_BUCKETS = [
  0.00005,
  0.0001,
  0.00025,
  0.0005,
  0.001,
  0.0025,
  0.005,
  0.01,
  0.025,
  0.05,
  0.1,
  0.25,
  1,
];
/** Bytes per second (Prometheus' base unit): 10 Mbit/s to 100 Gbit/s. */
export const BANDWIDTH_BUCKETS = [10, 100, 500, 1e3, 2.5e3, 5e3, 1e4, 2.5e4, 4e4, 1e5].map((
  mbits,
) => mbits * 1e6 / 8);
/** Seconds a round took: from a small cluster's few seconds to the longest --interval's. */
export const ROUND_BUCKETS = [1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800];

/**
 * Series that do not depend on N or M: rounds (2), overruns, the rounds' duration histogram,
 * nodes, failing dropped, and the five process metrics.
 */
const FIXED = 2 + 1 + (ROUND_BUCKETS.length + 3) + 1 + 1 + 5;
/**
 * Per network: latency histogram × 2 kinds (buckets + +Inf + sum + count),
 * bandwidth histogram, paths counter by phase × result.
 */
const PER_NETWORK = 2 * (LATENCY_BUCKETS.length + 3) + (BANDWIDTH_BUCKETS.length + 3) +
  PHASES.length * 2;

/** The most series the metrics can have for `nodes` nodes and `networks` networks. */
export function seriesBound(nodes: number, networks: number, maxFailingPaths: number): number {
  return FIXED + 2 * nodes + networks * PER_NETWORK + networks * (networks - 1) + maxFailingPaths;
}

/** The metrics of a watch; observe() every path of a round, then endRound(). */
export class NetcheckMetrics {
  readonly registry = new RegistryClass();
  readonly #rounds: Counter<"result">;
  readonly #overruns: Counter;
  readonly #duration: Histogram;
  readonly #nodes: Gauge;
  readonly #nodeFailed: Gauge<"node" | "direction">;
  readonly #paths: Counter<"phase" | "network" | "result">;
  readonly #latency: Histogram<"network" | "kind">;
  readonly #bandwidth: Histogram<"network">;
  readonly #leaks: Gauge<"from_network" | "to_network">;
  readonly #failing: Gauge<"phase" | "network" | "from" | "to">;
  readonly #failingDropped: Gauge;
  // The round in progress, applied at endRound().
  #failedFrom = new Map<string, number>();
  #failedTo = new Map<string, number>();
  #leakCounts = new Map<string, number>();
  #failingPaths: PathResult[] = [];
  #dropped = 0;

  constructor(readonly maxFailingPaths = 50) {
    const registers = [this.registry];
    this.#rounds = new CounterClass({
      name: "lace_netcheck_rounds_total",
      help: "Rounds finished, by result (passed: every path passed)",
      labelNames: ["result"],
      registers,
    });
    for (const result of ["passed", "failed"]) this.#rounds.inc({ result }, 0);
    this.#overruns = new CounterClass({
      name: "lace_netcheck_round_overruns_total",
      help:
        "Rounds that took longer than --interval (the next one started late, never overlapping)",
      registers,
    });
    this.#duration = new HistogramClass({
      name: "lace_netcheck_round_duration_seconds",
      help: "Time each round took",
      buckets: ROUND_BUCKETS,
      registers,
    });
    this.#nodes = new GaugeClass({
      name: "lace_netcheck_nodes",
      help: "Nodes with a ready probe pod in the last round",
      registers,
    });
    this.#nodeFailed = new GaugeClass({
      name: "lace_netcheck_node_failed_paths",
      help:
        "Paths from (direction=from) or to (direction=to) the node that failed in the last round",
      labelNames: ["node", "direction"],
      registers,
    });
    this.#paths = new CounterClass({
      name: "lace_netcheck_paths_total",
      help: "Paths tested, by phase, network and result",
      labelNames: ["phase", "network", "result"],
      registers,
    });
    this.#latency = new HistogramClass({
      name: "lace_netcheck_latency_seconds",
      help: "p50 per path of the TCP connect time (kind=connect) and request round trip (request)",
      labelNames: ["network", "kind"],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.#bandwidth = new HistogramClass({
      name: "lace_netcheck_bandwidth_bytes_per_second",
      help: "iperf3 bandwidth per path, in bytes per second",
      labelNames: ["network"],
      buckets: BANDWIDTH_BUCKETS,
      registers,
    });
    this.#leaks = new GaugeClass({
      name: "lace_netcheck_isolation_leaks",
      help: "Cross-network paths answered by the other network's pod in the last round",
      labelNames: ["from_network", "to_network"],
      registers,
    });
    this.#failing = new GaugeClass({
      name: "lace_netcheck_failing_path",
      help: "1 for a path that failed in the last round (at most --metrics-failing-paths of them)",
      labelNames: ["phase", "network", "from", "to"],
      registers,
    });
    this.#failingDropped = new GaugeClass({
      name: "lace_netcheck_failing_paths_not_shown",
      help: "Paths that failed in the last round beyond --metrics-failing-paths",
      registers,
    });
    registerProcessMetrics(this.registry);
  }

  /** Records one path of the round in progress. */
  observe(result: PathResult): void {
    const network = result.phase === "isolation" ? "" : result.network ?? "";
    const net = network || "default";
    this.#paths.inc({ phase: result.phase, network: net, result: result.ok ? "ok" : "failed" });
    if (result.latency) {
      this.#latency.observe({ network: net, kind: "connect" }, result.latency.connect.p50 / 1000);
      this.#latency.observe({ network: net, kind: "request" }, result.latency.request.p50 / 1000);
    }
    if (result.bitsPerSecond !== undefined) {
      this.#bandwidth.observe({ network: net }, result.bitsPerSecond / 8);
    }
    if (result.ok) return;
    this.#failedFrom.set(result.from, (this.#failedFrom.get(result.from) ?? 0) + 1);
    this.#failedTo.set(result.to, (this.#failedTo.get(result.to) ?? 0) + 1);
    if (result.errorClass === "LEAK" && result.network) {
      this.#leakCounts.set(result.network, (this.#leakCounts.get(result.network) ?? 0) + 1);
    }
    if (this.#failingPaths.length < this.maxFailingPaths) this.#failingPaths.push(result);
    else this.#dropped++;
  }

  /**
   * Ends a round: the per-round gauges are replaced by this round's figures
   * (series of nodes that left and paths that recovered disappear).
   */
  endRound(
    round: { nodes: readonly string[]; networks: readonly string[]; failed: boolean },
    durationMs: number,
    overran: boolean,
  ): void {
    this.#rounds.inc({ result: round.failed ? "failed" : "passed" });
    if (overran) this.#overruns.inc();
    this.#duration.observe(durationMs / 1000);
    this.#nodes.set(round.nodes.length);
    this.#nodeFailed.reset();
    for (const node of round.nodes) {
      this.#nodeFailed.set({ node, direction: "from" }, this.#failedFrom.get(node) ?? 0);
      this.#nodeFailed.set({ node, direction: "to" }, this.#failedTo.get(node) ?? 0);
    }
    this.#leaks.reset();
    for (const from of round.networks) {
      for (const to of round.networks) {
        if (from === to) continue;
        const leaks = this.#leakCounts.get(`${from} → ${to}`) ?? 0;
        this.#leaks.set({ from_network: from, to_network: to }, leaks);
      }
    }
    this.#failing.reset();
    for (const r of this.#failingPaths) {
      this.#failing.set({
        phase: r.phase,
        network: r.network || "default",
        from: r.from,
        to: r.to,
      }, 1);
    }
    this.#failingDropped.set(this.#dropped);
    this.#failedFrom = new Map();
    this.#failedTo = new Map();
    this.#leakCounts = new Map();
    this.#failingPaths = [];
    this.#dropped = 0;
  }

  /** Series exposed now (every sample line of the exposition, histograms' buckets included). */
  async seriesCount(): Promise<number> {
    const text = await this.registry.metrics();
    return text.split("\n").filter((l) => l !== "" && !l.startsWith("#")).length;
  }
}
