import assert from "node:assert/strict";
import { EXIT_ERROR, EXIT_INTERRUPTED, EXIT_PASSED, runChecks } from "./run.ts";
import { LEASE_NAME } from "./lease_lock.ts";
import { fakeNodes, MemoryCluster } from "../../tests/netcheck/memory_cluster.ts";
import { assertCleanedUp, options, quiet, run } from "../../tests/netcheck/run_fixture.ts";

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
  const cluster = new MemoryCluster(fakeNodes(3));
  await cluster.ensureNamespace("lace-system");
  await cluster.createLease("lace-system", {
    name: LEASE_NAME,
    holder: "other-run by ops@laptop",
    durationS: 60,
    renewTime: Date.now(),
    resourceVersion: "",
  });
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
  const cluster = new MemoryCluster(fakeNodes(2));
  await cluster.ensureNamespace("lace-system");
  await cluster.createLease("lace-system", {
    name: LEASE_NAME,
    holder: "crashed",
    durationS: 60,
    renewTime: Date.now() - 120_000,
    resourceVersion: "",
  });
  const { exitCode } = await runChecks(options(), {
    cluster,
    progress: quiet,
    sinks: [],
    pollMs: 1,
  });
  assert.equal(exitCode, EXIT_PASSED);
  assertCleanedUp(cluster);
});
