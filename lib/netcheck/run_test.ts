import assert from "node:assert/strict";
import { defaultNetcheckOptions, type NetcheckOptions } from "./options.ts";
import { JsonReport, summaryData, textReport } from "./report.ts";
import {
  EXIT_ERROR,
  EXIT_FAILED,
  EXIT_INTERRUPTED,
  EXIT_PASSED,
  runChecks,
  STOP_REQUESTED,
} from "./run.ts";
import { LEASE_NAME } from "./lease_lock.ts";
import { NetcheckMetrics } from "./metrics.ts";
import { probeDaemonSet } from "./manifest.ts";
import {
  type FakeNode,
  fakeNodes,
  MemoryCluster,
  type MemoryClusterOptions,
} from "../../tests/netcheck/memory_cluster.ts";

const quiet = { write: () => {}, isTerminal: false };

function options(over: Partial<NetcheckOptions> = {}): NetcheckOptions {
  return { ...defaultNetcheckOptions(), concurrency: 8, ...over };
}

async function run(
  nodes: FakeNode[],
  over: Partial<NetcheckOptions> = {},
  sim: MemoryClusterOptions = {},
  signal?: AbortSignal,
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
  });
  return { cluster, ...result };
}

function assertCleanedUp(cluster: MemoryCluster) {
  assert.equal(cluster.daemonSets.size, 0, "DaemonSet left behind");
  assert.equal(cluster.leases.size, 0, "Lease left behind");
}

Deno.test("a healthy cluster passes with every path tested once per phase and exit code 0", async () => {
  const { cluster, exitCode, summary } = await run(fakeNodes(7));
  assert.equal(exitCode, EXIT_PASSED);
  assert.equal(summary.connect.passed, 42);
  assert.equal(summary.latency.passed, 42);
  assert.equal(summary.bandwidth.passed, 42);
  assert.equal(cluster.pathCounts.size, 126);
  assert.ok([...cluster.pathCounts.values()].every((n) => n === 1));
  assert.deepEqual(cluster.violations, []);
  assert.ok(cluster.maxActive <= 8);
  assert.ok(cluster.namespaces.has("lace-system"));
  assertCleanedUp(cluster);
});

Deno.test("an unreachable node fails its paths as TIMEOUT, skips their bandwidth and exits 1", async () => {
  const nodes = fakeNodes(5);
  nodes[2].unreachable = true;
  const { cluster, exitCode, summary, outcome } = await run(nodes);
  assert.equal(exitCode, EXIT_FAILED);
  assert.equal(summary.connect.failed, 8);
  assert.deepEqual([...summary.failures.byClass], [["TIMEOUT", 8]]);
  assert.equal(summary.bandwidth.tested, 12);
  assert.ok(
    summary.failures.items.every((r) => r.from === nodes[2].name || r.to === nodes[2].name),
  );
  assert.match(textReport(summary, outcome), /TIMEOUT 8/);
  assertCleanedUp(cluster);
});

Deno.test("latency: every path gets connect and request p50/p99/max, slowest by p99 first", async () => {
  const nodes = fakeNodes(4);
  nodes[2].rttMs = 2;
  const { exitCode, summary, outcome } = await run(nodes, { latencySamples: 5 });
  assert.equal(exitCode, EXIT_PASSED);
  assert.equal(summary.latency.passed, 12);
  const slowest = summary.slowestLatency.items;
  assert.equal(slowest.length, 5);
  // The three paths to the slow node lead, with its figures (the last sample is 3× slower).
  assert.deepEqual(slowest.slice(0, 3).map((r) => r.to), [
    nodes[2].name,
    nodes[2].name,
    nodes[2].name,
  ]);
  assert.deepEqual(slowest[0].latency, {
    samples: 5,
    connect: { p50: 2, p99: 6, max: 6 },
    request: { p50: 2, p99: 6, max: 6 },
  });
  const text = textReport(summary, outcome);
  assert.match(text, /Latency: {6}12 paths, 12 passed, 0 failed/);
  assert.match(
    text,
    /Slowest paths by p99:\n {2}node-\d+ → node-0002 {2}connect p50 2\.00 ms, p99 6\.00 ms/,
  );
});

Deno.test("--max-latency fails exactly the paths whose p99 is above it, naming the figure", async () => {
  const nodes = fakeNodes(4);
  nodes[1].rttMs = 5;
  const { exitCode, summary } = await run(nodes, { latencySamples: 4, maxLatencyMs: 10 });
  assert.equal(exitCode, EXIT_FAILED);
  assert.equal(summary.latency.failed, 3);
  assert.deepEqual([...summary.failures.byClass], [["LATENCY", 3]]);
  for (const r of summary.failures.items) {
    assert.equal(r.to, nodes[1].name);
    assert.equal(r.message, "connect p99 15.0 ms is above --max-latency 10.0 ms");
  }
});

Deno.test("--latency-samples=0 skips the latency phase", async () => {
  const { cluster, summary } = await run(fakeNodes(3), { latencySamples: 0 });
  assert.equal(summary.latency.tested, 0);
  assert.ok(![...cluster.pathCounts.keys()].some((k) => k.startsWith("latency")));
});

/** A run with --networks on a cluster where the namespaces tenant-a and tenant-b exist. */
async function runNetworks(
  networks: string[],
  sim: MemoryClusterOptions = {},
  over: Partial<NetcheckOptions> = {},
) {
  const cluster = new MemoryCluster(fakeNodes(4), { recordPaths: true, ...sim });
  for (const ns of ["tenant-a", "tenant-b"]) await cluster.ensureNamespace(ns);
  const applied: Record<string, unknown>[] = [];
  const apply = cluster.applyDaemonSet.bind(cluster);
  cluster.applyDaemonSet = (ns, manifest) => {
    applied.push(manifest);
    return apply(ns, manifest);
  };
  const result = await runChecks(options({ networks, skipBandwidth: true, ...over }), {
    cluster,
    progress: quiet,
    sinks: [],
    runId: "iso1",
    pollMs: 1,
  });
  return { cluster, applied, ...result };
}

Deno.test("--networks: two networks reusing every address pass, with the matrix reported", async () => {
  const { cluster, exitCode, summary, outcome, applied } = await runNetworks([
    "tenant-a",
    "tenant-b",
  ]);
  assert.equal(exitCode, EXIT_PASSED, textReport(summary, outcome));
  assert.deepEqual(
    applied.map((m) => (m.metadata as { namespace: string }).namespace),
    ["tenant-a", "tenant-b"],
  );
  // Same-network connect and latency within each network, 4 nodes each.
  assert.equal(summary.connect.passed, 24);
  assert.equal(summary.latency.passed, 24);
  // Every pod of one network to every pod of the other, same node included.
  assert.equal(summary.isolation.tested, 32);
  assert.equal(summary.isolation.passed, 32);
  assert.deepEqual(summary.networks!.toJSON().cells, [
    [{ tested: 12, failed: 0 }, { tested: 16, failed: 0 }],
    [{ tested: 16, failed: 0 }, { tested: 12, failed: 0 }],
  ]);
  assert.match(
    textReport(summary, outcome),
    /Isolation: {4}32 cross-network paths, 32 isolated, 0 failed \(0 answered by the other network's pod\)\n.*\n {2}from\/to +tenant-a +tenant-b\n {2}tenant-a +12\/12 pass +16\/16 isolated\n {2}tenant-b +16\/16 isolated +12\/12 pass\n/,
  );
  assertCleanedUp(cluster);
});

Deno.test("--networks: one leaking direction fails the run naming the pair and the networks", async () => {
  const { cluster, exitCode, summary, outcome } = await runNetworks(["tenant-a", "tenant-b"], {
    distinctAddresses: true,
    leaks: [["n0", "n1"]],
  });
  assert.equal(exitCode, EXIT_FAILED);
  assert.equal(summary.isolation.failed, 16);
  assert.equal(summary.networks!.leaks, 16);
  assert.deepEqual(summary.networks!.toJSON().cells[1][0], { tested: 16, failed: 0 });
  assert.deepEqual([...summary.failures.byClass], [["LEAK", 16]]);
  const leak = summary.failures.items[0];
  assert.equal(leak.network, "tenant-a → tenant-b");
  assert.match(
    leak.message!,
    /^pod "lace-netcheck-iso1-n0-node-\d+" \(network tenant-a, node node-\d+\) asked 10\.0\.\d+\.3 of pod "lace-netcheck-iso1-n1-node-\d+" \(network tenant-b, node node-\d+\): answered by "lace-netcheck-iso1-n1-node-\d+" itself; a route or bridge joins/,
  );
  assert.match(
    textReport(summary, outcome),
    /isolation \[tenant-a → tenant-b\] node-\d+ → node-\d+ {2}LEAK/,
  );
  assertCleanedUp(cluster);
});

Deno.test("--networks: distinct addresses that nobody answers across networks are isolated", async () => {
  const { exitCode, summary } = await runNetworks(["tenant-a", "tenant-b"], {
    distinctAddresses: true,
  });
  assert.equal(exitCode, EXIT_PASSED);
  assert.equal(summary.isolation.passed, 32);
});

Deno.test("--networks with key=value labels: DaemonSets in --namespace, the label on the pods", async () => {
  const { exitCode, applied } = await runNetworks([
    "lace-test.io/network=blue",
    "lace-test.io/network=red",
  ]);
  assert.equal(exitCode, EXIT_PASSED);
  const podLabels = applied.map((m) =>
    (m.spec as { template: { metadata: { labels: Record<string, string> } } }).template.metadata
      .labels["lace-test.io/network"]
  );
  assert.deepEqual(podLabels, ["blue", "red"]);
  assert.deepEqual(
    applied.map((m) => (m.metadata as { namespace: string }).namespace),
    ["lace-system", "lace-system"],
  );
  // The plugin's label is on the pods only: the DaemonSets' selectors differ by network.
  const selectors = applied.map((m) => JSON.stringify((m.spec as { selector: unknown }).selector));
  assert.notEqual(selectors[0], selectors[1]);
  assert.ok(!selectors[0].includes("blue"));
});

Deno.test("--networks naming a namespace that does not exist stops the setup and leaves nothing", async () => {
  const { cluster, exitCode, outcome } = await runNetworks(["tenant-a", "tenant-x"]);
  assert.equal(exitCode, EXIT_ERROR);
  assert.match(
    outcome.error!,
    /network "tenant-x" in namespace "tenant-x".*netcheck never creates them/,
  );
  assert.ok(!cluster.namespaces.has("tenant-x"));
  assertCleanedUp(cluster);
});

Deno.test("a refusing node is reported as REFUSED", async () => {
  const nodes = fakeNodes(3);
  nodes[0].refuses = true;
  const { exitCode, summary } = await run(nodes);
  assert.equal(exitCode, EXIT_FAILED);
  assert.deepEqual([...summary.failures.byClass], [["REFUSED", 2]]);
});

Deno.test("a pod in ImagePullBackOff stops the run at once naming pod and node, exit 3", async () => {
  const nodes = fakeNodes(4);
  nodes[1].waitingReason = "ImagePullBackOff";
  const { cluster, exitCode, outcome } = await run(nodes, { readyTimeoutMs: 3_600_000 });
  assert.equal(exitCode, EXIT_ERROR);
  assert.match(outcome.error!, /ImagePullBackOff/);
  assert.ok(outcome.error!.includes(nodes[1].name));
  assert.equal(cluster.execs, 0);
  assertCleanedUp(cluster);
});

Deno.test("a cordoned node is skipped without failing the run", async () => {
  const nodes = fakeNodes(4);
  nodes[3].cordoned = true;
  const { exitCode, summary } = await run(nodes);
  assert.equal(exitCode, EXIT_PASSED);
  assert.equal(summary.connect.tested, 6);
  assert.equal(summary.skippedNodes.length, 1);
});

Deno.test("pods that never become ready fail the run at the ready timeout and are cleaned up", async () => {
  const nodes = fakeNodes(3);
  nodes[0].neverReady = true;
  const { cluster, exitCode, outcome } = await run(nodes, { readyTimeoutMs: 20 });
  assert.equal(exitCode, EXIT_ERROR);
  assert.match(outcome.error!, /not ready within/);
  assertCleanedUp(cluster);
});

Deno.test("a busy iperf3 server is retried and the path passes", async () => {
  const nodes = fakeNodes(3);
  nodes[1].busyTimes = 2;
  const { exitCode, summary } = await run(nodes);
  assert.equal(exitCode, EXIT_PASSED);
  assert.equal(summary.bandwidth.passed, 6);
});

Deno.test("a server busy beyond the retries fails the path as IPERF", async () => {
  const nodes = fakeNodes(2);
  nodes[1].busyTimes = 100;
  const { exitCode, summary } = await run(nodes, { bandwidthRetries: 2 });
  assert.equal(exitCode, EXIT_FAILED);
  assert.equal(summary.failures.items[0].errorClass, "IPERF");
  assert.equal(summary.failures.items[0].attempts, 3);
});

Deno.test("a slow path fails --min-bandwidth as SLOW and is listed first among the slowest", async () => {
  const nodes = fakeNodes(4);
  nodes[2].egressBps = 50e6;
  const { exitCode, summary, outcome } = await run(nodes, { minBandwidthBps: 1e9 });
  assert.equal(exitCode, EXIT_FAILED);
  assert.equal(summary.failures.byClass.get("SLOW"), 3);
  assert.equal(summary.slowest.items[0].from, nodes[2].name);
  assert.equal(summary.asymmetry.count, 3);
  assert.match(textReport(summary, outcome), /Asymmetric paths \(factor > 2\): 3/);
});

Deno.test("text after iperf3's JSON and an error key with exit 0 are handled per path", async () => {
  const nodes = fakeNodes(3);
  const { summary } = await run(nodes, {}, {
    iperfOutput: (json, from, to) =>
      from === nodes[0].name && to === nodes[1].name
        ? {
          exitCode: 0,
          stdout: JSON.stringify({ error: "control socket has closed" }),
          stderr: "",
        }
        : { exitCode: 0, stdout: json + "\nwarning: trailing text\n", stderr: "" },
  });
  assert.equal(summary.bandwidth.passed, 5);
  assert.equal(summary.bandwidth.failed, 1);
});

Deno.test("ipv6 picks the IPv6 address from podIPs", async () => {
  const targets = new Set<string>();
  const { exitCode } = await run(fakeNodes(3), { ipFamily: "ipv6" }, {
    onExec: (_pod, cmd) => targets.add(cmd.at(-1)!),
  });
  assert.equal(exitCode, EXIT_PASSED);
  assert.ok([...targets].some((t) => /^\[fd00::[0-9a-f]+:2\]:1199$/.test(t)), [...targets].join());
});

Deno.test("a ready pod without an address of the family fails the setup clearly", async () => {
  const nodes = fakeNodes(3);
  delete nodes[1].ipv6;
  const { cluster, exitCode, outcome } = await run(nodes, { ipFamily: "ipv6" });
  assert.equal(exitCode, EXIT_ERROR);
  assert.match(outcome.error!, /has no ipv6 address in status\.podIPs/);
  assertCleanedUp(cluster);
});

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

Deno.test("the JSON report lists every path and ends with the summary", async () => {
  let text = "";
  const cluster = new MemoryCluster(fakeNodes(3));
  await runChecks(options(), {
    cluster,
    progress: quiet,
    sinks: [new JsonReport((t) => text += t)],
    pollMs: 1,
  });
  const doc = JSON.parse(text);
  assert.equal(doc.paths.length, 18);
  assert.equal(doc.summary.status, "passed");
  assert.equal(doc.summary.latency.passed, 6);
  assert.equal(doc.summary.latency.slowest.length, 5);
  assert.deepEqual(Object.keys(doc.summary.latency.slowest[0]), [
    "from",
    "to",
    "samples",
    "connect",
    "request",
  ]);
  const latency = doc.paths.find((p: { phase: string }) => p.phase === "latency");
  assert.deepEqual(Object.keys(latency.latency.connect), ["p50", "p99", "max"]);
  assert.equal(doc.summary.bandwidth.passed, 6);
});

Deno.test("progress prints plain lines off a terminal and a single redrawn bar on one", async () => {
  const lines: string[] = [];
  await runChecks(options(), {
    cluster: new MemoryCluster(fakeNodes(4)),
    progress: { write: (t) => lines.push(t), isTerminal: false },
    sinks: [],
    pollMs: 1,
  });
  assert.ok(lines.every((l) => l.endsWith("\n") && !l.includes("\r")));
  assert.ok(lines.some((l) => l.startsWith("Connectivity: 12/12")));
  assert.ok(lines.some((l) => l.startsWith("Latency: 12/12")));
  assert.ok(lines.some((l) => l.startsWith("Bandwidth: 12/12")));
  const tty: string[] = [];
  await runChecks(options(), {
    cluster: new MemoryCluster(fakeNodes(4)),
    progress: { write: (t) => tty.push(t), isTerminal: true },
    sinks: [],
    pollMs: 1,
  });
  assert.equal(tty.filter((t) => t === "\n").length, 3);
  assert.ok(tty.filter((t) => t !== "\n").every((t) => t.startsWith("\r")));
});

/** A --watch run on the in-memory cluster, stopped by `stopAfter` rounds (or an error). */
async function watch(
  nodes: FakeNode[],
  over: Partial<NetcheckOptions>,
  hooks: {
    stopAfter: number;
    onRound?: (round: number, cluster: MemoryCluster) => void;
    onExec?: () => void;
    sleep?: (ms: number) => Promise<void>;
    now?: () => number;
    /** The abort reason of the stop (main.ts gives STOP_REQUESTED on SIGTERM). */
    stopReason?: unknown;
    /** Made before the run (e.g. to break deleting). */
    setUp?: (cluster: MemoryCluster) => void;
  },
) {
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
  const result = await runChecks(
    options({ watch: true, intervalMs: 60_000, skipBandwidth: true, ...over }),
    {
      cluster: new Proxy(cluster, {
        get(target, prop, receiver) {
          if (prop === "exec") {
            return (...args: Parameters<MemoryCluster["exec"]>) => {
              events.push(`exec ${round}`);
              hooks.onExec?.();
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
      now: hooks.now,
      onRound: (summary, outcome, info) => {
        assert.equal(cluster.active, 0, "a path still running when its round ended");
        assert.equal(cluster.daemonSets.size, 1, "probe pods gone during the watch");
        events.push(`end ${info.round} ${outcome.status} ${summary.connect.tested}`);
        hooks.onRound?.(info.round, cluster);
        if (info.round >= hooks.stopAfter) controller.abort(hooks.stopReason);
      },
      sleep: async (ms) => {
        events.push(`sleep ${ms}`);
        await hooks.sleep?.(ms);
        round++;
      },
    },
  );
  return { cluster, events, metrics, applies, ...result };
}

Deno.test("--watch runs rounds one after another on the same probe pods and removes everything when stopped", async () => {
  const { cluster, events, applies, exitCode, metrics } = await watch(fakeNodes(3), {}, {
    stopAfter: 3,
    now: () => 0,
  });
  assert.equal(exitCode, EXIT_INTERRUPTED);
  assert.equal(applies, 1, "the DaemonSet is created once, not per round");
  // Every exec of a round comes before its end; the next round only after the pause.
  const compact = events.filter((e, i) => e !== events[i - 1]);
  assert.deepEqual(compact, [
    "exec 1",
    "end 1 passed 6",
    "sleep 60000",
    "exec 2",
    "end 2 passed 6",
    "sleep 60000",
    "exec 3",
    "end 3 passed 6",
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
    now: () => 0,
    stopReason: STOP_REQUESTED,
  });
  assert.equal(exitCode, EXIT_PASSED);
  assert.equal(outcome.status, "interrupted");
  assertCleanedUp(cluster);
});

Deno.test("--watch stopped by SIGTERM that cannot delete its DaemonSet exits 3 and says what is left", async () => {
  const { exitCode, outcome } = await watch(fakeNodes(3), {}, {
    stopAfter: 1,
    now: () => 0,
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
  // Fake time: every exec takes 200 ms, so a round of 12 takes 2.4 s, over the 1 s interval.
  let execs = 0;
  const { events, metrics } = await watch(fakeNodes(3), { intervalMs: 1000 }, {
    stopAfter: 2,
    now: () => execs * 200,
    onExec: () => execs++,
  });
  assert.ok(events.includes("sleep 0"), events.join());
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
  assert.ok(events.includes("end 1 passed 12") && events.includes("end 2 passed 6"), events.join());
  assert.match(await metrics.registry.metrics(), /^lace_netcheck_nodes 3$/m);
});

Deno.test("--watch stops, removing its pods, when another runner takes the Lease over", async () => {
  const { cluster, exitCode, outcome } = await watch(fakeNodes(3), { leaseDurationS: 0.03 }, {
    stopAfter: 100,
    onRound: (round, c) => {
      if (round !== 1) return;
      const lease = c.leases.get(LEASE_NAME)!;
      c.leases.set(LEASE_NAME, { ...lease, holder: "other-run", resourceVersion: "999" });
    },
    // Real time, so the renewal (every 10 ms here) runs and finds the other holder.
    sleep: (ms) => new Promise((r) => setTimeout(r, Math.min(ms, 50))),
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
  }, { stopAfter: 4, now: () => 0 });
  const bandwidth = [...cluster.pathCounts].filter(([k]) => k.startsWith("bandwidth"));
  assert.equal(bandwidth.length, 132, "every directed pair measured");
  assert.ok(bandwidth.every(([, n]) => n === 1), "no pair measured twice in 4 rounds");
  // Connectivity stays all pairs (it fits the interval): 132 a round.
  assert.ok(events.includes("end 4 passed 132"), events.join());
  const connects = [...cluster.pathCounts].filter(([k]) => k.startsWith("connect"));
  assert.ok(connects.every(([, n]) => n === 4));
});

Deno.test("--watch samples connectivity too once all pairs no longer fit half the interval", async () => {
  let execs = 0;
  const { events, summary } = await watch(fakeNodes(12), {
    latencySamples: 0,
    peers: 3,
    intervalMs: 60_000,
  }, {
    stopAfter: 2,
    // Every connect takes 1 s of fake time: 132 s for all pairs, over the 30 s budget.
    now: () => execs * 1000,
    onExec: () => execs++,
  });
  assert.ok(
    events.includes("end 1 failed 132") || events.includes("end 1 passed 132"),
    events.join(),
  );
  // Round 2: 3 peers per node (the most that fit is 2; never fewer than --peers), each
  // tested both ways: 12 × 3 directed paths.
  assert.ok(events.some((e) => /^end 2 \w+ (\d+)$/.exec(e)?.[1] === "36"), events.join());
  assert.deepEqual(summary.sampling, {
    connectivityPeers: 3,
    bandwidthPeers: 0,
    round: 1,
    roundsToCover: 1,
  });
});

Deno.test("--mtu fails the paths of a black hole (small payloads pass, full-size ones vanish) and only those", async () => {
  const nodes = fakeNodes(4);
  nodes[2].blackHoleAbove = 1400;
  const { exitCode, summary, outcome } = await run(nodes, { mtu: true, skipBandwidth: true });
  assert.equal(exitCode, EXIT_FAILED);
  assert.equal(summary.mtu.tested, 12);
  assert.equal(summary.mtu.failed, 6, "every path to or from the black-holed node");
  assert.deepEqual([...summary.failures.byClass], [["MTU", 6]]);
  assert.ok(
    summary.failures.items.every((r) => r.from === nodes[2].name || r.to === nodes[2].name),
  );
  assert.match(
    summary.failures.items[0].message!,
    /^a 200 B payload passes but 4000, 16000 B do not; largest through 1400 B \(pod eth0 MTU 1500\): an MTU black hole/,
  );
  assert.match(
    summary.failures.items[0].message!,
    /; the connection's MSS is 1448 B \(segments of 1488 B and more\); a 200 B UDP datagram passes but a full-size 1472 B one with don't-fragment \(1500 B packets\) does not \(received 0 of 85 datagrams\)$/,
  );
  assert.match(
    textReport(summary, outcome),
    /MTU: {10}12 paths, 6 passed, 6 failed \(payloads up to 16000 B both ways, a 1 MiB TCP transfer; MSS 1448 B\); full-size UDP datagrams: 6 paths through, 6 lost/,
  );
});

Deno.test("--mtu fails the paths where small UDP datagrams pass and full-size ones vanish, naming UDP and the size", async () => {
  const nodes = fakeNodes(3);
  nodes[1].udpBlackHoleAbove = 1400;
  const { exitCode, summary, outcome, cluster } = await run(nodes, {
    mtu: true,
    skipBandwidth: true,
  });
  assert.equal(exitCode, EXIT_FAILED);
  assert.deepEqual(summary.mtu, { tested: 6, passed: 2, failed: 4 });
  assert.deepEqual(summary.udpFullSize, { passed: 2, lost: 4 });
  for (const f of summary.failures.items) {
    assert.equal(f.errorClass, "MTU");
    assert.ok(f.from === nodes[1].name || f.to === nodes[1].name);
    assert.equal(f.udpDatagram, 200, "the largest datagram through, beside the pod MTU");
    assert.equal(f.udpFullSize, false);
    assert.match(
      f.message!,
      /^payloads up to 16000 B pass over TCP \(pod eth0 MTU 1500\) and a 200 B UDP datagram passes, but a full-size 1472 B one with don't-fragment \(1500 B packets\) does not \(received 0 of 85 datagrams\): full-size UDP datagrams are lost on this path/,
    );
  }
  assert.match(textReport(summary, outcome), /full-size UDP datagrams: 2 paths through, 4 lost/);
  const json = summaryData(summary, outcome) as { mtu: { udpFullSize: unknown } };
  assert.deepEqual(json.mtu.udpFullSize, { passed: 2, lost: 4 });
  assert.equal(cluster.violations.length, 0, cluster.violations.join());
});

Deno.test("--udp tests every path by datagram: a node that drops UDP fails its paths while TCP passes", async () => {
  const nodes = fakeNodes(3);
  nodes[1].udpBlocked = true;
  const { exitCode, summary, outcome, cluster } = await run(nodes, {
    udp: true,
    skipBandwidth: true,
  });
  assert.equal(exitCode, EXIT_FAILED);
  assert.equal(summary.connect.failed, 0);
  assert.deepEqual(summary.udp, { tested: 6, passed: 2, failed: 4 });
  assert.ok(summary.failures.items.every((r) => r.phase === "udp" && r.errorClass === "TIMEOUT"));
  assert.match(textReport(summary, outcome), /UDP: {10}6 paths, 2 passed, 4 failed/);
  assert.equal([...cluster.pathCounts.keys()].filter((k) => k.startsWith("udp")).length, 6);
});

Deno.test("the probe pods run netexec's UDP server only with --udp", () => {
  const container = (udp: boolean) => ((probeDaemonSet({ ...options(), udp }, "r") as {
    spec: { template: { spec: { containers: { args: string[]; ports: unknown[] }[] } } };
  }).spec.template.spec.containers[0]);
  assert.ok(container(false).args.includes("--udp-port=-1"));
  assert.equal(container(false).ports.length, 1);
  assert.ok(container(true).args.includes("--udp-port=1200"));
  assert.equal(container(true).ports.length, 2);
});
