import assert from "node:assert/strict";
import { EXIT_ERROR, EXIT_INTERRUPTED, EXIT_PASSED, runChecks, STOP_REQUESTED } from "./run.ts";
import { LEASE_NAME } from "../cluster/lease.ts";
import { probeDaemonSet } from "../cluster/manifest.ts";
import type { NetcheckCluster } from "../cluster/netcheck_cluster.ts";
import { fakeNodes, MemoryCluster } from "../../../tests/netcheck/memory_cluster.ts";
import {
  assertCleanedUp,
  onFakeTime,
  options,
  quiet,
  run,
} from "../../../tests/netcheck/run_fixture.ts";
import { fakeTime } from "../../../tests/helpers/fake_time.ts";

/** A MemoryCluster of `nodes` nodes whose Lease `holder` renewed `ageMs` ago (live: 60 s). */
async function withLease(
  holder = "other-run by ops@laptop",
  ageMs = 0,
  nodes = 3,
): Promise<MemoryCluster> {
  const cluster = new MemoryCluster(fakeNodes(nodes));
  await cluster.ensureNamespace("lace-system");
  await cluster.createLease("lace-system", {
    name: LEASE_NAME,
    holder,
    durationS: 60,
    renewTime: Date.now() - ageMs,
    resourceVersion: "",
  });
  return cluster;
}

Deno.test("an interrupt stops the run, deletes the DaemonSet and releases the lease", async () => {
  const controller = new AbortController();
  let execs = 0;
  const { cluster, exitCode, outcome } = await run(fakeNodes(10), {}, {
    execMs: 2,
    onExec: () => {
      if (++execs === 20) controller.abort();
    },
  }, controller.signal);
  assert.equal(exitCode, EXIT_INTERRUPTED);
  assert.equal(outcome.status, "interrupted");
  assert.ok(cluster.execs < 90 * 2);
  assertCleanedUp(cluster);
});

Deno.test("a live lease of another run stops this run, naming it, and creates nothing", async () => {
  const cluster = await withLease();
  const { exitCode, outcome } = await runChecks(options(), {
    cluster,
    progress: quiet,
    sinks: [],
    pollMs: 1,
  });
  assert.equal(exitCode, EXIT_ERROR);
  assert.match(outcome.error!, /Another netcheck run "other-run by ops@laptop" holds Lease/);
  assert.equal(cluster.execs, 0);
  assert.equal(cluster.leases.get(LEASE_NAME)!.holder, "other-run by ops@laptop");
});

Deno.test("an expired lease of a crashed run is taken over", async () => {
  const cluster = await withLease("crashed", 120_000, 2);
  const { exitCode } = await runChecks(options(), {
    cluster,
    progress: quiet,
    sinks: [],
    pollMs: 1,
  });
  assert.equal(exitCode, EXIT_PASSED);
  assertCleanedUp(cluster);
});

Deno.test("--watch stands by while another run holds the Lease, making nothing, and takes over once it is released", async () => {
  const cluster = await withLease();
  const { clock, timers } = fakeTime();
  const controller = new AbortController();
  const written: string[] = [];
  const tries: number[] = [];
  const create = cluster.createLease.bind(cluster);
  cluster.createLease = (ns, lease) => {
    tries.push(clock.now);
    return create(ns, lease);
  };
  // The holder releases it 50 s in; until then the standby makes nothing and runs nothing.
  clock.setTimeout(() => {
    assert.equal(cluster.daemonSets.size, 0);
    assert.equal(cluster.execs, 0);
    cluster.leases.delete(LEASE_NAME);
  }, 50_000);
  let rounds = 0;
  const { exitCode } = await onFakeTime(
    clock,
    runChecks(options({ watch: true, intervalMs: 60_000, skipBandwidth: true }), {
      cluster,
      progress: { write: (text) => written.push(text), isTerminal: false },
      sinks: [],
      signal: controller.signal,
      pollMs: 1,
      timers,
      onRound: () => {
        rounds++;
        controller.abort(STOP_REQUESTED);
      },
    }),
  );
  // A third of the Lease's duration between tries; one line for the holder, not one per try.
  assert.deepEqual(tries, [0, 20_000, 40_000, 60_000]);
  const standby = written.filter((line) => line.startsWith("Standing by"));
  assert.equal(standby.length, 1, written.join(""));
  assert.match(
    standby[0],
    /^Standing by: Another netcheck run "other-run by ops@laptop" holds Lease "lace-system\/lace-netcheck" \(until .*\); taking over when it is released or expires\n$/,
  );
  assert.equal(rounds, 1);
  assert.ok(cluster.execs > 0);
  assert.equal(exitCode, EXIT_PASSED);
  assertCleanedUp(cluster);
});

Deno.test("--watch on standby stopped by SIGTERM exits 0, having made nothing and left the holder's Lease", async () => {
  const cluster = await withLease();
  const { clock, timers } = fakeTime();
  const controller = new AbortController();
  const { exitCode, outcome } = await onFakeTime(
    clock,
    runChecks(options({ watch: true, intervalMs: 60_000 }), {
      cluster,
      // Stopped as it starts standing by.
      progress: { write: () => controller.abort(STOP_REQUESTED), isTerminal: false },
      sinks: [],
      signal: controller.signal,
      timers,
    }),
  );
  assert.equal(exitCode, EXIT_PASSED, outcome.error ?? "");
  assert.equal(outcome.status, "interrupted");
  assert.equal(cluster.execs, 0);
  assert.equal(cluster.daemonSets.size, 0);
  assert.equal(cluster.leases.get(LEASE_NAME)!.holder, "other-run by ops@laptop");
});

Deno.test("taking over the expired Lease of a killed run deletes the probe DaemonSets it left", async () => {
  const cluster = await withLease("dead1234 by unknown@lace-netcheck-5f6d-abcde", 120_000, 2);
  await cluster.applyDaemonSet("lace-system", probeDaemonSet(options(), "dead1234"));
  const written: string[] = [];
  const { exitCode } = await runChecks(options(), {
    cluster,
    progress: { write: (text) => written.push(text), isTerminal: false },
    sinks: [],
    pollMs: 1,
  });
  assert.equal(exitCode, EXIT_PASSED);
  assert.ok(
    written.includes(
      'Took over the expired Lease of run "dead1234 by unknown@lace-netcheck-5f6d-abcde": ' +
        "deleted the probe DaemonSets it left\n",
    ),
    written.join(""),
  );
  assertCleanedUp(cluster);
});

/** The in-memory cluster with owners to give, as the API server's adapter has. */
type Owning = MemoryCluster & Pick<NetcheckCluster, "configMapOwner">;

Deno.test("--owner-configmap makes the ConfigMap the owner of the DaemonSet and the Lease made in --namespace", async () => {
  const cluster: Owning = new MemoryCluster(fakeNodes(2));
  const owner = { apiVersion: "v1", kind: "ConfigMap", name: "lace-netcheck", uid: "u-1" };
  cluster.configMapOwner = (namespace, name) =>
    Promise.resolve(namespace === "lace-system" && name === owner.name ? owner : assert.fail());
  const made: unknown[] = [];
  const apply = cluster.applyDaemonSet.bind(cluster);
  cluster.applyDaemonSet = (ns, manifest) => {
    made.push((manifest.metadata as { ownerReferences?: unknown }).ownerReferences);
    return apply(ns, manifest);
  };
  const create = cluster.createLease.bind(cluster);
  cluster.createLease = (ns, lease) => {
    made.push([lease.owner]);
    return create(ns, lease);
  };
  const { exitCode } = await runChecks(options({ ownerConfigMap: "lace-netcheck" }), {
    cluster,
    progress: quiet,
    sinks: [],
    pollMs: 1,
  });
  assert.equal(exitCode, EXIT_PASSED);
  assert.deepEqual(made, [[owner], [owner]]);
  assertCleanedUp(cluster);
});

Deno.test("--owner-configmap naming a ConfigMap that cannot be read stops the setup and makes nothing", async () => {
  const cluster: Owning = new MemoryCluster(fakeNodes(2));
  cluster.configMapOwner = () => Promise.reject(new Error("HTTP 403"));
  const { exitCode, outcome } = await runChecks(options({ ownerConfigMap: "gone" }), {
    cluster,
    progress: quiet,
    sinks: [],
    pollMs: 1,
  });
  assert.equal(exitCode, EXIT_ERROR);
  assert.match(
    outcome.error!,
    /Cannot read ConfigMap "lace-system\/gone" \(--owner-configmap; configmaps get\): HTTP 403/,
  );
  assert.equal(cluster.execs, 0);
  assertCleanedUp(cluster);
});
