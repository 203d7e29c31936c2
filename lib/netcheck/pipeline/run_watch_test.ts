import assert from "node:assert/strict";
import type { NetcheckOptions } from "../options.ts";
import { EXIT_ERROR, EXIT_INTERRUPTED, EXIT_PASSED, runChecks, STOP_REQUESTED } from "./run.ts";
import { LEASE_NAME } from "../cluster/lease.ts";
import { NetcheckMetrics } from "../report/metrics.ts";
import { type FakeNode, fakeNodes, MemoryCluster } from "../../../tests/netcheck/memory_cluster.ts";
import {
  assertCleanedUp,
  onFakeTime,
  options,
  quiet,
} from "../../../tests/netcheck/run_fixture.ts";
import { fakeTime } from "../../../tests/helpers/fake_time.ts";

/**
 * A --watch run on the in-memory cluster and fake time, stopped by `stopAfter` rounds (or an
 * error). Its events name each round's execs and end with the fake time they happened at.
 */
async function watch(
  nodes: FakeNode[],
  over: Partial<NetcheckOptions>,
  hooks: {
    stopAfter: number;
    onRound?: (round: number, cluster: MemoryCluster) => void;
    /** Fake time every exec takes (it runs on the clock as it starts). */
    execMs?: number;
    /** The abort reason of the stop (main.ts gives STOP_REQUESTED on SIGTERM). */
    stopReason?: unknown;
    /** Made before the run (e.g. to break deleting). */
    setUp?: (cluster: MemoryCluster) => void;
  },
) {
  const { clock, timers } = fakeTime();
  const cluster = new MemoryCluster(nodes, { recordPaths: true });
  hooks.setUp?.(cluster);
  const controller = new AbortController();
  const events: string[] = [];
  const metrics = new NetcheckMetrics(5);
  let applies = 0;
  const apply = cluster.applyDaemonSet.bind(cluster);
  cluster.applyDaemonSet = (ns, m) => {
    applies++;
    return apply(ns, m);
  };
  let round = 1;
  const result = await onFakeTime(
    clock,
    runChecks(options({ watch: true, intervalMs: 60_000, skipBandwidth: true, ...over }), {
      cluster: new Proxy(cluster, {
        get(target, prop, receiver) {
          if (prop === "exec") {
            return (...args: Parameters<MemoryCluster["exec"]>) => {
              events.push(`exec ${round} @${clock.now}`);
              if (hooks.execMs) clock.tick(hooks.execMs);
              return target.exec(...args);
            };
          }
          const v = Reflect.get(target, prop, receiver);
          return typeof v === "function" ? v.bind(target) : v;
        },
      }),
      progress: quiet,
      sinks: [],
      signal: controller.signal,
      runId: "w1",
      pollMs: 1,
      metrics,
      timers,
      onRound: (summary, outcome, info) => {
        assert.equal(cluster.active, 0, "a path still running when its round ended");
        assert.equal(cluster.daemonSets.size, 1, "probe pods gone during the watch");
        events.push(`end ${info.round} ${outcome.status} ${summary.connect.tested} @${clock.now}`);
        hooks.onRound?.(info.round, cluster);
        if (info.round >= hooks.stopAfter) controller.abort(hooks.stopReason);
        round++;
      },
    }),
  );
  return { cluster, events, metrics, applies, ...result };
}

Deno.test("--watch runs rounds one after another on the same probe pods and removes everything when stopped", async () => {
  const { cluster, events, applies, exitCode, metrics } = await watch(fakeNodes(3), {}, {
    stopAfter: 3,
  });
  assert.equal(exitCode, EXIT_INTERRUPTED);
  assert.equal(applies, 1, "the DaemonSet is created once, not per round");
  // Every exec of a round comes before its end; the next round only after the pause.
  const compact = events.filter((e, i) => e !== events[i - 1]);
  assert.deepEqual(compact, [
    "exec 1 @0",
    "end 1 passed 6 @0",
    "exec 2 @60000",
    "end 2 passed 6 @60000",
    "exec 3 @120000",
    "end 3 passed 6 @120000",
  ]);
  assertCleanedUp(cluster);
  const text = await metrics.registry.metrics();
  assert.match(text, /^lace_netcheck_rounds_total\{result="passed"\} 3$/m);
  assert.match(
    text,
    /^lace_netcheck_paths_total\{phase="connect",network="default",result="ok"\} 18$/m,
  );
});

Deno.test("--watch stopped as a service (SIGTERM) exits 0 once everything it made is removed", async () => {
  const { cluster, exitCode, outcome } = await watch(fakeNodes(3), {}, {
    stopAfter: 2,
    stopReason: STOP_REQUESTED,
  });
  assert.equal(exitCode, EXIT_PASSED);
  assert.equal(outcome.status, "interrupted");
  assertCleanedUp(cluster);
});

Deno.test("--watch stopped by SIGTERM that cannot delete its DaemonSet exits 3 and says what is left", async () => {
  const { exitCode, outcome } = await watch(fakeNodes(3), {}, {
    stopAfter: 1,
    stopReason: STOP_REQUESTED,
    setUp: (c) => {
      c.deleteDaemonSet = () => Promise.reject(new Error("forbidden"));
    },
  });
  assert.equal(exitCode, EXIT_ERROR);
  assert.match(
    outcome.error!,
    /Could not delete DaemonSet "lace-system\/lace-netcheck-w1": delete it by hand/,
  );
});

Deno.test("a single run stopped by SIGTERM still exits 130: it did not finish its checks", async () => {
  const cluster = new MemoryCluster(fakeNodes(3));
  const controller = new AbortController();
  cluster.options.onExec = () => controller.abort(STOP_REQUESTED);
  const { exitCode } = await runChecks(options(), {
    cluster,
    progress: quiet,
    sinks: [],
    signal: controller.signal,
    pollMs: 1,
  });
  assert.equal(exitCode, EXIT_INTERRUPTED);
  assertCleanedUp(cluster);
});

Deno.test("--watch: a round longer than --interval delays the next one (no overlap) and counts an overrun", async () => {
  // Every exec takes 200 ms of fake time: a round of 12 takes longer than the interval.
  const { events, metrics } = await watch(fakeNodes(3), { intervalMs: 1000 }, {
    stopAfter: 2,
    execMs: 200,
  });
  // Round 2 starts as round 1 ends, without a pause.
  const end1 = events.find((e) => e.startsWith("end 1 "))!.split("@")[1];
  assert.equal(events.find((e) => e.startsWith("exec 2 ")), `exec 2 @${end1}`, events.join());
  assert.ok(Number(end1) > 1000, events.join());
  assert.match(await metrics.registry.metrics(), /^lace_netcheck_round_overruns_total 2$/m);
});

Deno.test("--watch picks up a node that stopped being ready between rounds", async () => {
  const nodes = fakeNodes(4);
  const { events, metrics } = await watch(nodes, {}, {
    stopAfter: 2,
    onRound: (round) => {
      if (round === 1) nodes[3].neverReady = true;
    },
  });
  assert.ok(
    events.includes("end 1 passed 12 @0") && events.includes("end 2 passed 6 @60000"),
    events.join(),
  );
  assert.match(await metrics.registry.metrics(), /^lace_netcheck_nodes 3$/m);
});

Deno.test("--watch stops, removing its pods, when another runner takes the Lease over", async () => {
  // The renewal a third of the Lease's duration into the pause finds the other holder.
  const { cluster, exitCode, outcome } = await watch(fakeNodes(3), {}, {
    stopAfter: 100,
    onRound: (round, c) => {
      if (round !== 1) return;
      const lease = c.leases.get(LEASE_NAME)!;
      c.leases.set(LEASE_NAME, { ...lease, holder: "other-run", resourceVersion: "999" });
    },
  });
  assert.equal(exitCode, EXIT_ERROR);
  assert.match(outcome.error!, /Lost Lease "lace-system\/lace-netcheck" to "other-run"/);
  assert.equal(cluster.daemonSets.size, 0, "DaemonSet left behind");
});

Deno.test("above --sample-threshold, --watch rounds test k peers for bandwidth and cover every pair in ⌈(N−1)/k⌉ rounds", async () => {
  // 12 nodes, 3 peers: ⌈11/3⌉ = 4 rounds.
  const { cluster, events } = await watch(fakeNodes(12), {
    skipBandwidth: false,
    sampleThreshold: 10,
    peers: 3,
    latencySamples: 0,
  }, { stopAfter: 4 });
  const bandwidth = [...cluster.pathCounts].filter(([k]) => k.startsWith("bandwidth"));
  assert.equal(bandwidth.length, 132, "every directed pair measured");
  assert.ok(bandwidth.every(([, n]) => n === 1), "no pair measured twice in 4 rounds");
  // Connectivity stays all pairs (it fits the interval): 132 a round.
  assert.ok(events.includes("end 4 passed 132 @180000"), events.join());
  const connects = [...cluster.pathCounts].filter(([k]) => k.startsWith("connect"));
  assert.ok(connects.every(([, n]) => n === 4));
});

Deno.test("--watch samples connectivity too once all pairs no longer fit half the interval", async () => {
  const { events, summary } = await watch(fakeNodes(12), {
    latencySamples: 0,
    peers: 3,
    intervalMs: 60_000,
  }, {
    stopAfter: 2,
    // Every connect takes 1 s of fake time: all pairs take longer than half the interval.
    execMs: 1000,
  });
  assert.ok(events.some((e) => /^end 1 \w+ 132 /.test(e)), events.join());
  // Round 2: 3 peers per node (the most that fit is 2; never fewer than --peers), each
  // tested both ways: 12 × 3 directed paths.
  assert.ok(events.some((e) => /^end 2 \w+ (\d+) /.exec(e)?.[1] === "36"), events.join());
  assert.deepEqual(summary.sampling, {
    connectivityPeers: 3,
    bandwidthPeers: 0,
    round: 1,
    roundsToCover: 1,
  });
});

Deno.test("--watch sizes its connectivity sample on the nodes of the round just run, not the first", async () => {
  // 3 nodes at first; 9 more join after round 1, so round 2 runs all 132 pairs, 1 s each.
  const nodes = fakeNodes(12);
  for (const node of nodes.slice(3)) node.cordoned = true;
  const { events } = await watch(nodes, { latencySamples: 0, peers: 1, intervalMs: 60_000 }, {
    stopAfter: 3,
    execMs: 1000,
    onRound: (round) => {
      if (round === 1) { for (const node of nodes) node.cordoned = false; }
    },
  });
  assert.ok(events.some((e) => /^end 1 \w+ 6 /.test(e)), events.join());
  assert.ok(events.some((e) => /^end 2 \w+ 132 /.test(e)), events.join());
  // Round 3: the 132 s of round 2 fit 2 peers per node in half the interval (⌊11 × 30 / 132⌋),
  // tested both ways: 12 × 2 directed paths. Sized on round 1's 3 nodes it would be 1 peer.
  assert.ok(events.some((e) => /^end 3 \w+ 24 /.test(e)), events.join());
});
