/**
 * The shared setup of runChecks() unit tests in lib/netcheck/pipeline/run*_test.ts:
 * options with a small concurrency, a run over the in-memory cluster with
 * fast polling, a run on fake time, and the check that a run left nothing
 * behind.
 */
import assert from "node:assert/strict";
import type { fakeTime } from "../helpers/fake_time.ts";
import { defaultNetcheckOptions, type NetcheckOptions } from "../../lib/netcheck/options.ts";
import { runChecks, type RunEnvironment } from "../../lib/netcheck/pipeline/run.ts";
import { type FakeNode, MemoryCluster, type MemoryClusterOptions } from "./memory_cluster.ts";

/** A progress sink that prints nothing, off a terminal. */
export const quiet = { write: () => {}, isTerminal: false };

/** The default options with concurrency 8, overridden by `over`. */
export function options(over: Partial<NetcheckOptions> = {}): NetcheckOptions {
  return { ...defaultNetcheckOptions(), concurrency: 8, ...over };
}

/** A run over `nodes` on an in-memory cluster recording paths, polling and retrying every millisecond. */
export async function run(
  nodes: FakeNode[],
  over: Partial<NetcheckOptions> = {},
  sim: MemoryClusterOptions = {},
  signal?: AbortSignal,
  env: Partial<RunEnvironment> = {},
) {
  const cluster = new MemoryCluster(nodes, { recordPaths: true, ...sim });
  const result = await runChecks(options(over), {
    cluster,
    progress: quiet,
    sinks: [],
    signal,
    runId: "test1",
    pollMs: 1,
    retryDelayMs: 1,
    ...env,
  });
  return { cluster, ...result };
}

/** Fails unless the run removed its DaemonSet and released its Lease. */
export function assertCleanedUp(cluster: MemoryCluster) {
  assert.equal(cluster.daemonSets.size, 0, "DaemonSet left behind");
  assert.equal(cluster.leases.size, 0, "Lease left behind");
}

/**
 * Settles as `work` does, moving `clock` on whenever `work` waits: each turn lets everything
 * ready run (the in-memory cluster answers within microtasks), then fires the next fake timer
 * (a poll, a retry, a Lease renewal, the pause between --watch rounds). Time thus passes only
 * while the run waits, as it would on an idle machine.
 */
export async function onFakeTime<T>(
  clock: ReturnType<typeof fakeTime>["clock"],
  work: Promise<T>,
): Promise<T> {
  let settled = false;
  const done = work.finally(() => settled = true);
  // Handled here while the loop runs; the caller gets the failure from the return.
  done.catch(() => {});
  while (!settled) await clock.nextAsync();
  return done;
}
