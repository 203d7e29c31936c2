/**
 * The rounds of a run: one, or with --watch one every --interval until
 * stopped. Rounds run one after another, so they never overlap: a round
 * longer than --interval makes the next one start late (an overrun), never
 * early. Every round after the first lists the ready probe pods again, so
 * nodes that came or went since are tested as they are now.
 */
import type { LeaseLock } from "../cluster/lease.ts";
import { LEASE_NAME } from "../cluster/lease.ts";
import type { ProbeNetwork } from "../cluster/manifest.ts";
import type { NetworkEndpoint } from "../cluster/netcheck_cluster.ts";
import { nodeNames } from "../cluster/endpoints.ts";
import { SetupError } from "../cluster/errors.ts";
import { elapsedMs } from "../checks/in_pod.ts";
import type { NetcheckOptions } from "../options.ts";
import type { RunOutcome } from "../report/formats.ts";
import type { NetcheckMetrics } from "../report/metrics.ts";
import type { Summary } from "../report/summary.ts";
import { sleep, type Timers } from "../../time/timers.ts";
import type { Rounds } from "./round.ts";

/** A finished round of --watch. */
export interface RoundInfo {
  round: number;
  elapsedMs: number;
  /** It took longer than --interval. */
  overran: boolean;
}

/** What the rounds wait on and whom they tell. */
export interface WatchEnvironment {
  options: NetcheckOptions;
  networks: ProbeNetwork[];
  /** Checked between rounds: another runner that took it over ends this one. */
  lease: LeaseLock;
  signal?: AbortSignal;
  timers: Timers;
  /** The run's outcome so far; each round's copy says whether that round passed. */
  outcome: RunOutcome;
  /** Observes each round's end. */
  metrics?: NetcheckMetrics;
  /** Called after each round with its summary (the caller prints it). */
  onRound?: (summary: Summary, outcome: RunOutcome, round: RoundInfo) => void | Promise<void>;
  /** The ready probe pods of every network now. */
  relist: () => Promise<NetworkEndpoint[][]>;
}

/**
 * Runs the first round over `first`, then with --watch a round every
 * --interval until `signal` aborts; rounds.summary is the last round's.
 */
export async function runRounds(
  rounds: Rounds,
  first: NetworkEndpoint[][],
  w: WatchEnvironment,
): Promise<void> {
  const { options, signal, timers } = w;
  rounds.summary.nodes = nodeNames(first);
  let started = timers.now();
  // The probe pods of the round just run: the next round's sample is sized on them.
  let last = first;
  await rounds.check(first);
  if (!options.watch) return;
  for (let round = 1;; round++) {
    const { summary } = rounds;
    const elapsed = elapsedMs(timers, started);
    const overran = elapsed > options.intervalMs;
    w.metrics?.endRound(
      { nodes: summary.nodes, networks: w.networks.map((n) => n.name), failed: summary.failed },
      elapsed,
      overran,
    );
    const status = summary.failed ? "failed" : "passed";
    await w.onRound?.(summary, { ...w.outcome, status }, { round, elapsedMs: elapsed, overran });
    if (signal?.aborted) return;
    await sleep(timers, Math.max(0, options.intervalMs - elapsed), signal);
    if (signal?.aborted) return;
    if (w.lease.lost) {
      throw new SetupError(
        `Lost Lease "${options.namespace}/${LEASE_NAME}" to "${w.lease.lost}": another runner ` +
          "took over; stopping this one",
      );
    }
    rounds.next(last);
    started = timers.now();
    last = await w.relist();
    rounds.summary.nodes = nodeNames(last);
    await rounds.check(last);
  }
}
