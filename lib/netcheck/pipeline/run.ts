/**
 * One netcheck run against a NetcheckCluster, as a pipeline: set-up (the
 * Lease, the probe DaemonSets), the probe pods' readiness, the rounds (one,
 * or with --watch one every --interval), the report to the sinks, then the
 * teardown of everything set-up made, on success, failure, timeout and
 * interrupt; and the exit code.
 */
import { getLogger } from "@logtape/logtape";
import type { CheckContext } from "../checks/in_pod.ts";
import { listEndpoints, waitForEndpoints } from "../cluster/endpoints.ts";
import { describeError, SetupError } from "../cluster/errors.ts";
import { probeNetworks } from "../cluster/manifest.ts";
import type { NetcheckCluster } from "../cluster/netcheck_cluster.ts";
import type { NetcheckOptions } from "../options.ts";
import type { PathSink, RunOutcome } from "../report/formats.ts";
import type { NetcheckMetrics } from "../report/metrics.ts";
import { Progress, type ProgressOutput } from "../report/progress.ts";
import type { Summary } from "../report/summary.ts";
import { CleanupStack } from "../../os/cleanup_stack.ts";
import { HeapGate } from "../../os/heap_gate.ts";
import { realTimers, type Timers } from "../../time/timers.ts";
import { Rounds } from "./round.ts";
import { setUpRun, tearDownRun } from "./setup.ts";
import { type RoundInfo, runRounds } from "./watch.ts";

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
  /** Every wait, retry and duration: polls, rounds, the Lease's renewals (fake time in tests). */
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

export interface RunResult {
  exitCode: number;
  summary: Summary;
  outcome: RunOutcome;
}

/** A short random run id, valid in names and labels. */
export function newRunId(): string {
  return crypto.randomUUID().replaceAll("-", "").slice(0, 8);
}

/** The exit code of a run that ended with `outcome`. */
export function exitCodeOf(
  outcome: RunOutcome,
  end: { watch: boolean; stopRequested: boolean; leftOver: boolean },
): number {
  // A watch stopped by its service manager ends normally, if it removed what it made.
  if (end.watch && end.stopRequested && outcome.status === "interrupted") {
    return end.leftOver ? EXIT_ERROR : EXIT_PASSED;
  }
  return {
    passed: EXIT_PASSED,
    failed: EXIT_FAILED,
    error: EXIT_ERROR,
    interrupted: EXIT_INTERRUPTED,
  }[outcome.status];
}

/** Runs netcheck; returns the exit code, summary and outcome (the caller prints the report). */
export async function runChecks(options: NetcheckOptions, env: RunEnvironment): Promise<RunResult> {
  const { signal } = env;
  const timers = env.timers ?? realTimers;
  const runId = env.runId ?? newRunId();
  const networks = probeNetworks(options, runId);
  const outcome: RunOutcome = {
    runId,
    status: "passed",
    minBandwidthBps: options.minBandwidthBps,
    asymmetryFactor: options.asymmetry,
    maxLatencyMs: options.maxLatencyMs,
  };
  // The cluster becomes set-up's own (--owner-configmap) before the first check.
  const checks: CheckContext = {
    cluster: env.cluster,
    options,
    signal,
    timers,
    retryDelayMs: env.retryDelayMs,
  };
  const rounds = new Rounds({
    options,
    networks,
    checks,
    progress: new Progress(env.progress),
    sinks: env.sinks,
    metrics: env.metrics,
    heap: env.heapGate ?? new HeapGate({ stepBytes: NETCHECK_HEAP_STEP }),
  });
  const cleanup = new CleanupStack("netcheck run");
  try {
    const { cluster, lease } = await setUpRun(options, {
      cluster: env.cluster,
      runId,
      holder: env.holder ?? runId,
      networks,
      signal,
      timers,
      wallClock: env.wallClock,
      write: (line) => env.progress.write(line),
    }, cleanup);
    checks.cluster = cluster;
    const ready = await waitForEndpoints(cluster, networks, options, rounds.summary.skippedNodes, {
      pollMs: env.pollMs,
      signal,
      timers,
    });
    await runRounds(rounds, ready, {
      options,
      networks,
      lease,
      signal,
      timers,
      outcome,
      metrics: env.metrics,
      onRound: env.onRound,
      relist: () => listEndpoints(cluster, networks, options),
    });
    if (signal?.aborted) throw new SetupError("Interrupted");
    outcome.status = rounds.summary.failed ? "failed" : "passed";
  } catch (e) {
    outcome.status = signal?.aborted ? "interrupted" : "error";
    outcome.error = describeError(e);
    if (!(e instanceof SetupError)) log.debug("Run failed: {error}", { error: e });
  }
  const leftOver = await tearDownRun(cleanup, outcome);
  const { summary } = rounds;
  for (const sink of env.sinks) await sink.finish(summary, outcome);
  const exitCode = exitCodeOf(outcome, {
    watch: options.watch,
    stopRequested: signal?.reason === STOP_REQUESTED,
    leftOver,
  });
  return { exitCode, summary, outcome };
}
