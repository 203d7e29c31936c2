import assert from "node:assert/strict";
import { HeapGate } from "../../os/heap_gate.ts";
import { textReport } from "../report/formats.ts";
import { EXIT_ERROR, EXIT_FAILED, EXIT_PASSED } from "./run.ts";
import { fakeNodes } from "../../../tests/netcheck/memory_cluster.ts";
import { assertCleanedUp, run } from "../../../tests/netcheck/run_fixture.ts";

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

Deno.test("a run collects its own garbage as it goes: the heap gate is asked after every path", async () => {
  // A heap that grows a byte each time it is read: with a step of 3 bytes the gate collects on
  // every third path of the run.
  let heap = 0;
  let collections = 0;
  const heapGate = new HeapGate({ stepBytes: 3, heapUsed: () => heap++, gc: () => collections++ });
  const { exitCode, summary } = await run(fakeNodes(7), {}, {}, undefined, { heapGate });
  assert.equal(exitCode, EXIT_PASSED);
  const paths = summary.connect.tested + summary.latency.tested + summary.bandwidth.tested;
  assert.equal(paths, 126);
  // A check reads the heap once (a byte), and the gate reads it again after a collection to
  // count from there: 3 checks a collection.
  assert.equal(collections, paths / 3);
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
