/**
 * A run's set-up and its undoing: the namespace, the owner of what the run
 * makes (--owner-configmap), the Lease (stood by for with --watch; what its
 * dead holder left is deleted), the probe DaemonSets. Each step that makes
 * something pushes its undoing onto the run's CleanupStack before it makes
 * it, so tearDownRun() removes exactly what was made, whatever end the run
 * takes: passed, failed, a setup error or an interrupt.
 */
import { getLogger } from "@logtape/logtape";
import { createProbeDaemonSets, deleteProbeDaemonSets } from "../cluster/daemonsets.ts";
import { SetupError } from "../cluster/errors.ts";
import { acquireLease, type LeaseLock, waitForLease } from "../cluster/lease.ts";
import type { ProbeNetwork } from "../cluster/manifest.ts";
import type { NetcheckCluster } from "../cluster/netcheck_cluster.ts";
import { ownedByConfigMap } from "../cluster/owner.ts";
import { removeStaleRun } from "../cluster/takeover.ts";
import type { NetcheckOptions } from "../options.ts";
import type { CleanupStack } from "../../os/cleanup_stack.ts";
import type { Timers } from "../../time/timers.ts";

const log = getLogger(["lace", "netcheck"]);

/** What a run is set up with. */
export interface SetupEnvironment {
  cluster: NetcheckCluster;
  runId: string;
  /** Identifies the run in the Lease (who, where). */
  holder: string;
  networks: ProbeNetwork[];
  signal?: AbortSignal;
  timers: Timers;
  wallClock?: () => number;
  /** Gets the lines a run says about its Lease (standing by, a takeover). */
  write: (line: string) => void;
}

/** A run set up: the cluster it works through and the Lease it holds. */
export interface RunSetup {
  /** The one it was given, or owned by --owner-configmap's ConfigMap. */
  cluster: NetcheckCluster;
  lease: LeaseLock;
}

/** Something a run made and could not remove; `note`, if any, says what to do for the outcome. */
class LeftBehind extends Error {
  override name = "LeftBehind";
  constructor(readonly note?: string) {
    super(note ?? "left behind");
  }
}

/** Sets a run up, pushing the undoing of each thing it makes onto `cleanup`. */
export async function setUpRun(
  options: NetcheckOptions,
  env: SetupEnvironment,
  cleanup: CleanupStack,
): Promise<RunSetup> {
  const ns = options.namespace;
  let cluster = env.cluster;
  await cluster.ensureNamespace(ns);
  if (options.ownerConfigMap) cluster = await ownedByConfigMap(cluster, ns, options.ownerConfigMap);
  const clock = { timers: env.timers, wallClock: env.wallClock };
  const lease = options.watch
    ? await waitForLease(cluster, ns, env.holder, options.leaseDurationS, {
      ...clock,
      signal: env.signal,
      write: env.write,
    })
    : await acquireLease(cluster, ns, env.holder, options.leaseDurationS, clock);
  if (!lease) throw new SetupError("Interrupted");
  cleanup.push(() =>
    lease.release().catch((e) => {
      // It expires after its duration; a stop that left it is not a clean one.
      log.warn("Could not release the Lease: {error}", { error: (e as Error).message });
      throw new LeftBehind();
    })
  );
  if (lease.tookOverFrom) await removeStaleRun(cluster, options, lease.tookOverFrom, env.write);
  const created: ProbeNetwork[] = [];
  cleanup.push(async () => {
    const left = await deleteProbeDaemonSets(cluster, created);
    if (left.length > 0) throw new LeftBehind(left.join("; "));
  });
  await createProbeDaemonSets(cluster, options, env.runId, env.networks, created);
  return { cluster, lease };
}

/**
 * Undoes what setUpRun() made, newest first, every step even after one
 * fails; what is left behind is added to `outcome.error`. Returns whether
 * anything was left (a --watch stopped by SIGTERM then exits with an error).
 */
export async function tearDownRun(
  cleanup: CleanupStack,
  outcome: { error?: string },
): Promise<boolean> {
  const failures = await cleanup.runAll();
  for (const failure of failures) {
    if (!(failure instanceof LeftBehind)) {
      log.error("Cleaning up the run failed: {error}", { error: failure });
    } else if (failure.note) {
      outcome.error = outcome.error ? `${outcome.error}; ${failure.note}` : failure.note;
    }
  }
  return failures.length > 0;
}
