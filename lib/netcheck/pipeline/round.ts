/**
 * The rounds of a run: each runs every network's phases (phases.ts) over
 * that network's pairs, then checks isolation between the networks, and
 * records every path as it finishes. From one round to the next carry the
 * rotation of the sampled peers and how many peers connectivity tests.
 */
import { getLogger } from "@logtape/logtape";
import { type CheckContext, checkIsolation } from "../checks/in_pod.ts";
import { crossNetworkPairs, NetworkMatrix, probePodNetworks } from "../checks/isolation.ts";
import type { PathResult } from "../checks/path_result.ts";
import type { ProbeNetwork } from "../cluster/manifest.ts";
import type { NetworkEndpoint } from "../cluster/netcheck_cluster.ts";
import type { NetcheckOptions } from "../options.ts";
import { directedPairs, type Pair, pairCount } from "../pairs/directed.ts";
import {
  connectivityPeers,
  roundsToCover,
  sampledPairCount,
  sampledPairs,
} from "../pairs/peers.ts";
import { schedulePairs } from "../pairs/scheduler.ts";
import type { PathSink } from "../report/formats.ts";
import type { NetcheckMetrics } from "../report/metrics.ts";
import type { Progress } from "../report/progress.ts";
import { Summary } from "../report/summary.ts";
import type { HeapGate } from "../../os/heap_gate.ts";
import { NETWORK_PHASES, type NetworkPhase } from "./phases.ts";

const log = getLogger(["lace", "netcheck"]);

/** What the rounds check with and where every path goes. */
export interface RoundsEnvironment {
  options: NetcheckOptions;
  networks: ProbeNetwork[];
  checks: CheckContext;
  progress: Progress;
  sinks: PathSink[];
  metrics?: NetcheckMetrics;
  heap: HeapGate;
}

const podOf = (e: NetworkEndpoint) => e.pod;
const pathKey = (p: Pair<NetworkEndpoint>) => `${p.from.pod}\u0000${p.to.pod}`;

/** A run's rounds; check() runs one, next() prepares the one after it. */
export class Rounds {
  /** The current round's results; next() starts a new one. */
  summary: Summary;
  readonly #env: RoundsEnvironment;
  /** 0-based: rotates the sampled peers. */
  #index = 0;
  /** Connectivity's peers per node this round; 0: all pairs. */
  #connectPeers: number;
  /** Time this round spent on the phases of connectivity's pairs while they are all pairs. */
  #allPairsMs = 0;

  constructor(env: RoundsEnvironment) {
    this.#env = env;
    this.#connectPeers = env.options.connectivityPeers;
    this.summary = this.#newSummary();
  }

  #newSummary(): Summary {
    const summary = new Summary(this.#env.options.asymmetry);
    const names = this.#env.networks.map((n) => n.name);
    summary.networks = names.length > 1 ? new NetworkMatrix(names) : undefined;
    return summary;
  }

  /** Records a finished path: this round's summary, the metrics, every sink, the progress. */
  async record(result: PathResult): Promise<void> {
    this.#env.heap.check();
    this.summary.add(result);
    this.#env.metrics?.observe(result);
    for (const sink of this.#env.sinks) await sink.path(result);
    this.#env.progress.tick(result.ok);
  }

  /** Every network's own paths, then the paths between networks. */
  async check(perNetwork: NetworkEndpoint[][]): Promise<void> {
    const { networks, options, checks: { signal } } = this.#env;
    const multi = networks.length > 1;
    for (const [index, endpoints] of perNetwork.entries()) {
      if (signal?.aborted) return;
      if (endpoints.length < 2) {
        log.warn("Only {n} probe pod is ready in network {network}; skipping its paths", {
          n: endpoints.length,
          network: networks[index].name || options.namespace,
        });
        this.summary.skippedNodes.push({
          node: networks[index].name || options.namespace,
          reason: `only ${endpoints.length} probe pod ready this round`,
        });
        continue;
      }
      await this.#checkNetwork(endpoints, multi ? networks[index].name : undefined);
    }
    if (multi && !signal?.aborted) await this.#checkIsolation(perNetwork);
  }

  /**
   * Prepares the next round: a new summary, the sample rotated, and, while connectivity tests
   * all pairs, as many peers as fit half the interval once all pairs of `perNetwork` no longer do.
   */
  next(perNetwork: NetworkEndpoint[][]): void {
    const { options } = this.#env;
    this.#index++;
    if (options.connectivityPeers === 0 && this.#connectPeers === 0) {
      const n = Math.max(...perNetwork.map((e) => e.length));
      const ms = Math.round(this.#allPairsMs);
      this.#connectPeers = connectivityPeers(n, ms, options.intervalMs / 2, options.peers);
      if (this.#connectPeers > 0) {
        log.warn(
          "Connectivity and latency over all pairs took {ms} ms, more than half of " +
            "--interval: testing {peers} peers per node a round from now on",
          { ms, peers: this.#connectPeers },
        );
      }
    }
    this.#allPairsMs = 0;
    this.summary = this.#newSummary();
  }

  /** The directed pairs of `endpoints` with `peers` peers a node this round (0: all). */
  #pairs(endpoints: NetworkEndpoint[], peers: number): Generator<Pair<NetworkEndpoint>> {
    return peers > 0 && peers < endpoints.length - 1
      ? sampledPairs(endpoints, peers, this.#index)
      : directedPairs(endpoints);
  }

  #pairCount(n: number, peers: number): number {
    return peers > 0 && peers < n - 1 ? sampledPairCount(n, peers, this.#index) : pairCount(n);
  }

  /** One network's phases, each over its sample of the network's pairs. */
  async #checkNetwork(endpoints: NetworkEndpoint[], network: string | undefined): Promise<void> {
    const { options, progress, checks } = this.#env;
    const n = endpoints.length;
    const bandwidthPeers = n > options.sampleThreshold ? options.peers : 0;
    this.summary.sampling = {
      connectivityPeers: this.#connectPeers,
      bandwidthPeers,
      round: this.#index,
      roundsToCover: roundsToCover(n, bandwidthPeers || n),
    };
    const failedConnect = new Set<string>();
    for (const phase of NETWORK_PHASES) {
      if (!phase.enabled(options) || checks.signal?.aborted) continue;
      const peers = phase.peers === "bandwidth" ? bandwidthPeers : this.#connectPeers;
      const count = this.#pairCount(n, peers);
      // Paths whose connect failed outside this round's bandwidth sample are subtracted too:
      // the bar is an estimate then.
      const total = phase.connectedOnly ? Math.max(0, count - failedConnect.size) : count;
      progress.start(network === undefined ? phase.label : `${phase.label} (${network})`, total);
      const started = checks.timers.now();
      const pairs = this.#pairs(endpoints, peers);
      await schedulePairs(
        phase.connectedOnly ? this.#connected(pairs, failedConnect, phase) : pairs,
        podOf,
        async (pair) => {
          const result = await phase.check(checks, pair, network);
          if (!result) return;
          await this.record(result);
          if (phase.phase !== "connect") return;
          if (!result.ok) failedConnect.add(pathKey(pair));
          this.summary.networks?.record(pair.from.network, pair.to.network, result.ok);
        },
        { concurrency: options.concurrency, exclusive: phase.exclusive, signal: checks.signal },
      );
      progress.end();
      if (phase.peers === "connectivity" && this.#connectPeers === 0) {
        this.#allPairsMs += checks.timers.now() - started;
      }
    }
  }

  /** The pairs whose connect did not fail; bandwidth counts the others as not measured. */
  *#connected(
    pairs: Iterable<Pair<NetworkEndpoint>>,
    failedConnect: ReadonlySet<string>,
    phase: NetworkPhase,
  ): Generator<Pair<NetworkEndpoint>> {
    for (const pair of pairs) {
      // No key string per pair when every connect succeeded (the usual run).
      if (failedConnect.size === 0 || !failedConnect.has(pathKey(pair))) yield pair;
      else if (phase.phase === "bandwidth") {
        this.summary.skipBandwidth(pair.from.node, pair.to.node);
      }
    }
  }

  /** Every path from a pod of one network to a pod of another: none may be answered. */
  async #checkIsolation(perNetwork: NetworkEndpoint[][]): Promise<void> {
    const { networks, options, progress, checks } = this.#env;
    const total = perNetwork.reduce((n, e) => n + e.length, 0);
    progress.start("Isolation", perNetwork.reduce((n, e) => n + e.length * (total - e.length), 0));
    const probes = probePodNetworks(perNetwork, networks.map((n) => n.name));
    await schedulePairs(crossNetworkPairs(perNetwork), podOf, async (pair) => {
      const result = await checkIsolation(checks, pair, networks, probes);
      if (!result) return;
      this.summary.networks!.record(
        pair.from.network,
        pair.to.network,
        result.ok,
        result.errorClass === "LEAK",
      );
      await this.record(result);
    }, { concurrency: options.concurrency, exclusive: false, signal: checks.signal });
    progress.end();
  }
}
