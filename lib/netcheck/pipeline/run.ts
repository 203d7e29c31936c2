/**
 * One netcheck run against a NetcheckCluster: lease, DaemonSet, readiness,
 * connectivity for every directed pair, bandwidth for the pairs that
 * connected, report. The DaemonSet and the lease are always removed, on
 * success, failure, timeout and interrupt.
 */
import { getLogger } from "@logtape/logtape";
import type { NetcheckCluster, NetworkEndpoint } from "../cluster/netcheck_cluster.ts";
import { describeError } from "../cluster/errors.ts";
import {
  checkConnect,
  type CheckContext,
  checkIsolation,
  checkMtu,
  elapsedMs,
  measureBandwidth,
  measureLatency,
} from "../checks/in_pod.ts";
import { acquireLease, type LeaseLock, waitForLease } from "../cluster/lease.ts";
import { type ProbeNetwork, probeNetworks } from "../cluster/manifest.ts";
import { createProbeDaemonSets, removeRunObjects } from "../cluster/daemonsets.ts";
import { crossNetworkPairs, NetworkMatrix, probePodNetworks } from "../checks/isolation.ts";
import { CONNECT_PORT, type NetcheckOptions, UDP_PORT } from "../options.ts";
import { directedPairs, type Pair, pairCount } from "../pairs/directed.ts";
import {
  connectivityPeers,
  roundsToCover,
  sampledPairCount,
  sampledPairs,
} from "../pairs/peers.ts";
import { Progress, type ProgressOutput } from "../report/progress.ts";
import { SetupError } from "../cluster/errors.ts";
import { listEndpoints, nodeNames, waitForEndpoints } from "../cluster/endpoints.ts";
import type { PathSink, RunOutcome } from "../report/formats.ts";
import { schedulePairs } from "../pairs/scheduler.ts";
import { removeStaleRun } from "../cluster/takeover.ts";
import { ownedByConfigMap } from "../cluster/owner.ts";
import type { PathResult } from "../checks/path_result.ts";
import { Summary } from "../report/summary.ts";
import type { NetcheckMetrics } from "../report/metrics.ts";
import { HeapGate } from "../../os/heap_gate.ts";
import { realTimers, sleep, type Timers } from "../../time/timers.ts";

const log = getLogger(["lace", "netcheck"]);

export const EXIT_PASSED = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;
export const EXIT_ERROR = 3;
export const EXIT_INTERRUPTED = 130;

/**
 * The abort reason of a stop asked for by a service manager (SIGTERM): a
 * `--watch` stopped this way that removed everything it made exits 0, its
 * normal end; Ctrl-C (any other reason) exits 130.
 */
export const STOP_REQUESTED = "SIGTERM";

export interface RunEnvironment {
  cluster: NetcheckCluster;
  progress: ProgressOutput;
  /** Receive every path, then the summary (JSON, JUnit). */
  sinks: PathSink[];
  /** Aborted on Ctrl-C, or with reason STOP_REQUESTED on SIGTERM. */
  signal?: AbortSignal;
  runId?: string;
  /** Identifies this run in the Lease (who, where). */
  holder?: string;
  pollMs?: number;
  /** Pause before retrying a busy iperf3 server. */
  retryDelayMs?: number;
  /** Every wait, retry and duration of the run: polls, rounds, the Lease's renewals (fake time in tests). */
  timers?: Timers;
  /** Stamps the Lease (wall time, as every runner reads it). */
  wallClock?: () => number;
  /** --watch: observes every path and each round's end. */
  metrics?: NetcheckMetrics;
  /** --watch: called after each round with its summary (the caller prints it). */
  onRound?: (summary: Summary, outcome: RunOutcome, round: RoundInfo) => void | Promise<void>;
  /** Collects the run's garbage as it goes (a gate of NETCHECK_HEAP_STEP by default). */
  heapGate?: HeapGate;
}

/**
 * How much netcheck's heap may grow between two full collections of its own. A run holds
 * little but turns over much (every session's command, exec and result, promoted in bursts),
 * and V8 lets that garbage pile up to several times the live heap before its first full
 * collection; collecting at each step keeps a large cluster's peak near a small one's
 * (bench/RESULTS.md, "netcheck collects its own garbage").
 */
export const NETCHECK_HEAP_STEP = 4 * 1024 * 1024;

/** A finished round of --watch. */
export interface RoundInfo {
  round: number;
  elapsedMs: number;
  /** It took longer than --interval. */
  overran: boolean;
}

export interface RunResult {
  exitCode: number;
  summary: Summary;
  outcome: RunOutcome;
}

/** A short random run id, valid in names and labels. */
export function newRunId(): string {
  return crypto.randomUUID().replaceAll("-", "").slice(0, 8);
}

/** Runs netcheck; returns the exit code, summary and outcome (the caller prints the report). */
export async function runChecks(options: NetcheckOptions, env: RunEnvironment): Promise<RunResult> {
  const { signal } = env;
  const timers = env.timers ?? realTimers;
  // Owned (--owner-configmap) once the run has read its owner.
  let cluster = env.cluster;
  const runId = env.runId ?? newRunId();
  const ns = options.namespace;
  let summary = new Summary(options.asymmetry);
  const outcome: RunOutcome = {
    runId,
    status: "passed",
    minBandwidthBps: options.minBandwidthBps,
    asymmetryFactor: options.asymmetry,
    maxLatencyMs: options.maxLatencyMs,
  };
  const progress = new Progress(env.progress);
  const heap = env.heapGate ?? new HeapGate({ stepBytes: NETCHECK_HEAP_STEP });
  const record = async (result: PathResult) => {
    heap.check();
    summary.add(result);
    env.metrics?.observe(result);
    for (const sink of env.sinks) await sink.path(result);
    progress.tick(result.ok);
  };

  // Its cluster is replaced by the owned one (--owner-configmap) during set-up.
  const ctx: CheckContext = { cluster, options, signal, timers, retryDelayMs: env.retryDelayMs };

  const networks = probeNetworks(options, runId);
  const multi = networks.length > 1;
  const newMatrix = () => multi ? new NetworkMatrix(networks.map((n) => n.name)) : undefined;
  let matrix = newMatrix();
  /** Connectivity, latency and bandwidth between the pods of one network. */
  // Rounds of --watch (0-based) rotate the sampled peers; connectivity and latency stay all
  // pairs (0) until a round of them no longer fits half the interval.
  let roundIndex = 0;
  let connectPeers = options.connectivityPeers;
  let allPairsMs = 0;
  const bandwidthSampled = (n: number) => n > options.sampleThreshold;
  const pairsOf = (endpoints: NetworkEndpoint[], peers: number) =>
    peers > 0 && peers < endpoints.length - 1
      ? sampledPairs(endpoints, peers, roundIndex)
      : directedPairs(endpoints);
  const countOf = (n: number, peers: number) =>
    peers > 0 && peers < n - 1 ? sampledPairCount(n, peers, roundIndex) : pairCount(n);
  const checkNetwork = async (endpoints: NetworkEndpoint[], network: string | undefined) => {
    const connectStarted = timers.now();
    const bandwidthPeers = bandwidthSampled(endpoints.length) ? options.peers : 0;
    summary.sampling = {
      connectivityPeers: connectPeers,
      bandwidthPeers,
      round: roundIndex,
      roundsToCover: roundsToCover(endpoints.length, bandwidthPeers || endpoints.length),
    };
    const failedConnect = new Set<string>();
    const pathKey = (p: Pair<NetworkEndpoint>) => `${p.from.pod}\u0000${p.to.pod}`;
    const key = (e: NetworkEndpoint) => e.pod;
    const concurrency = options.concurrency;

    const label = (phase: string) => network === undefined ? phase : `${phase} (${network})`;
    // Every path of the network names it (reports, and the metrics' per-network series).
    const ofNetwork = (result: PathResult) =>
      network === undefined ? result : { ...result, network };
    progress.start(label("Connectivity"), countOf(endpoints.length, connectPeers));
    // One agnhost connect from the pair's source pod, recorded: whether it connected, undefined
    // when aborted.
    const connectOnce = async (
      pair: Pair<NetworkEndpoint>,
      phase: "connect" | "udp",
      args: string[],
      port: number,
    ): Promise<boolean | undefined> => {
      const result = await checkConnect(ctx, pair, { phase, args, port, network });
      if (!result) return undefined;
      await record(result);
      return result.ok;
    };
    await schedulePairs(pairsOf(endpoints, connectPeers), key, async (pair) => {
      const ok = await connectOnce(pair, "connect", [], CONNECT_PORT);
      if (ok === undefined) return;
      if (!ok) failedConnect.add(pathKey(pair));
      matrix?.record(pair.from.network, pair.to.network, ok);
    }, { concurrency, exclusive: false, signal });
    progress.end();

    // The pairs whose connect passed: latency and MTU are measured on those only.
    const connected = function* () {
      for (const pair of pairsOf(endpoints, connectPeers)) {
        if (failedConnect.size === 0 || !failedConnect.has(pathKey(pair))) yield pair;
      }
    };
    if (options.latencySamples > 0 && !signal?.aborted) {
      progress.start(
        label("Latency"),
        countOf(endpoints.length, connectPeers) - failedConnect.size,
      );
      await schedulePairs(connected(), key, async (pair) => {
        const result = await measureLatency(ctx, pair);
        if (result) await record(ofNetwork(result));
      }, { concurrency, exclusive: false, signal });
      progress.end();
    }

    if (options.udp && !signal?.aborted) {
      // Every pair: UDP may pass where TCP fails and the other way round.
      progress.start(label("UDP"), countOf(endpoints.length, connectPeers));
      await schedulePairs(pairsOf(endpoints, connectPeers), key, async (pair) => {
        await connectOnce(pair, "udp", ["--protocol=udp"], UDP_PORT);
      }, { concurrency, exclusive: false, signal });
      progress.end();
    }

    if (options.mtu && !signal?.aborted) {
      progress.start(label("MTU"), countOf(endpoints.length, connectPeers) - failedConnect.size);
      await schedulePairs(connected(), key, async (pair) => {
        const result = await checkMtu(ctx, pair);
        if (result) await record(ofNetwork(result));
      }, { concurrency, exclusive: true, signal });
      progress.end();
    }

    if (connectPeers === 0) allPairsMs += elapsedMs(timers, connectStarted);

    if (!options.skipBandwidth && !signal?.aborted) {
      const connected = function* () {
        for (const pair of pairsOf(endpoints, bandwidthPeers)) {
          // No key string per pair when every connect succeeded (the usual run).
          if (failedConnect.size > 0 && failedConnect.has(pathKey(pair))) {
            summary.skipBandwidth(pair.from.node, pair.to.node);
          } else yield pair;
        }
      };
      // Paths whose connect failed but that this round's bandwidth sample does not include are
      // subtracted too; the bar is an estimate then.
      progress.start(
        label("Bandwidth"),
        Math.max(0, countOf(endpoints.length, bandwidthPeers) - failedConnect.size),
      );
      await schedulePairs(connected(), key, async (pair) => {
        const result = await measureBandwidth(ctx, pair);
        if (result) await record(ofNetwork(result));
      }, { concurrency, exclusive: true, signal });
      progress.end();
    }
  };

  /** Every network's own paths, then the paths between networks. */
  const checkRound = async (perNetwork: NetworkEndpoint[][]) => {
    for (const [index, endpoints] of perNetwork.entries()) {
      if (signal?.aborted) return;
      if (endpoints.length < 2) {
        log.warn("Only {n} probe pod is ready in network {network}; skipping its paths", {
          n: endpoints.length,
          network: networks[index].name || ns,
        });
        summary.skippedNodes.push({
          node: networks[index].name || ns,
          reason: `only ${endpoints.length} probe pod ready this round`,
        });
        continue;
      }
      await checkNetwork(endpoints, multi ? networks[index].name : undefined);
    }
    if (multi && !signal?.aborted) {
      const total = perNetwork.reduce((n, e) => n + e.length, 0);
      const count = perNetwork.reduce((n, e) => n + e.length * (total - e.length), 0);
      progress.start("Isolation", count);
      const probes = probePodNetworks(perNetwork, networks.map((n) => n.name));
      await schedulePairs(crossNetworkPairs(perNetwork), (e) => e.pod, async (pair) => {
        const result = await checkIsolation(ctx, pair, networks, probes);
        if (!result) return;
        matrix!.record(
          pair.from.network,
          pair.to.network,
          result.ok,
          result.errorClass === "LEAK",
        );
        await record(result);
      }, { concurrency: options.concurrency, exclusive: false, signal });
      progress.end();
    }
  };

  const relist = () => listEndpoints(cluster, networks, options);
  const readyEndpoints = () =>
    waitForEndpoints(cluster, networks, options, summary.skippedNodes, {
      pollMs: env.pollMs,
      signal,
      timers,
    });

  summary.networks = matrix;
  let lease: LeaseLock | undefined;
  const created: ProbeNetwork[] = [];
  /** Something this run made that it could not remove. */
  let leftOver = false;
  try {
    await cluster.ensureNamespace(ns);
    if (options.ownerConfigMap) {
      cluster = ctx.cluster = await ownedByConfigMap(cluster, ns, options.ownerConfigMap);
    }
    const holder = env.holder ?? runId;
    lease = options.watch
      ? await waitForLease(cluster, ns, holder, options.leaseDurationS, {
        timers,
        wallClock: env.wallClock,
        signal,
        write: (line) => env.progress.write(line),
      })
      : await acquireLease(cluster, ns, holder, options.leaseDurationS, {
        timers,
        wallClock: env.wallClock,
      });
    if (!lease) throw new SetupError("Interrupted");
    if (lease.tookOverFrom) {
      await removeStaleRun(cluster, options, lease.tookOverFrom, (l) => env.progress.write(l));
    }
    await createProbeDaemonSets(cluster, options, runId, networks, created);
    const perNetwork = await readyEndpoints();
    summary.nodes = nodeNames(perNetwork);
    let started = timers.now();
    await checkRound(perNetwork);
    if (options.watch) {
      // Rounds run one after another, so they never overlap: a round that takes longer than
      // --interval makes the next one start late (counted as an overrun), never early.
      let round = 1;
      for (;;) {
        const elapsed = elapsedMs(timers, started);
        const overran = elapsed > options.intervalMs;
        const roundOutcome = { ...outcome, status: summary.failed ? "failed" : "passed" } as const;
        env.metrics?.endRound(
          {
            nodes: summary.nodes,
            networks: networks.map((n) => n.name),
            failed: summary.failed,
          },
          elapsed,
          overran,
        );
        await env.onRound?.(summary, roundOutcome, { round, elapsedMs: elapsed, overran });
        if (signal?.aborted) break;
        await sleep(timers, Math.max(0, options.intervalMs - elapsed), signal);
        if (signal?.aborted) break;
        if (lease.lost) {
          throw new SetupError(
            `Lost Lease "${ns}/lace-netcheck" to "${lease.lost}": another runner took over; ` +
              "stopping this one",
          );
        }
        round++;
        roundIndex++;
        if (options.connectivityPeers === 0 && connectPeers === 0) {
          const n = Math.max(...perNetwork.map((e) => e.length));
          connectPeers = connectivityPeers(n, allPairsMs, options.intervalMs / 2, options.peers);
          if (connectPeers > 0) {
            log.warn(
              "Connectivity and latency over all pairs took {ms} ms, more than half of " +
                "--interval: testing {peers} peers per node a round from now on",
              { ms: allPairsMs, peers: connectPeers },
            );
          }
        }
        allPairsMs = 0;
        started = timers.now();
        summary = new Summary(options.asymmetry);
        matrix = newMatrix();
        summary.networks = matrix;
        const current = await relist();
        summary.nodes = nodeNames(current);
        await checkRound(current);
      }
    }
    if (signal?.aborted) throw new SetupError("Interrupted");
    outcome.status = summary.failed ? "failed" : "passed";
  } catch (e) {
    outcome.status = signal?.aborted ? "interrupted" : "error";
    outcome.error = describeError(e);
    if (!(e instanceof SetupError)) log.debug("Run failed: {error}", { error: e });
  } finally {
    leftOver = await removeRunObjects(cluster, created, lease, outcome);
  }
  for (const sink of env.sinks) await sink.finish(summary, outcome);
  const stopped = options.watch && outcome.status === "interrupted" &&
    signal?.reason === STOP_REQUESTED;
  const exitCode = stopped ? (leftOver ? EXIT_ERROR : EXIT_PASSED) : {
    passed: EXIT_PASSED,
    failed: EXIT_FAILED,
    error: EXIT_ERROR,
    interrupted: EXIT_INTERRUPTED,
  }[outcome.status];
  return { exitCode, summary, outcome };
}
