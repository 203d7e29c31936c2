/**
 * The plumbing of the bench's probes figure (bench/probe_columns.ts), on made-up inputs: the kubelet's metrics text read per namespace, the
 * quantiles of its histogram, cpu.stat, the three columns' pods, and which goals a measurement
 * meets. No node runs and no time is measured here.
 */
import assert from "node:assert/strict";
import {
  type ColumnMeasured,
  cpuUsageUsec,
  nodeCpuPerThousand,
  parseSamples,
  probeCounts,
  probeDelta,
  probedPod,
  probeRowsAndGoals,
  quantile,
  singleProbeDurations,
  totalProbes,
} from "../bench/probe_columns.ts";
import { parseArgs } from "../bench/main.ts";
import { probeSamples, readProbes } from "../bench/probe_node.ts";

const METRICS =
  `# HELP prober_probe_total [ALPHA] Cumulative number of a liveness, readiness or startup probe for a container by result.
# TYPE prober_probe_total counter
prober_probe_total{container="server",namespace="bench-flat-5",pod="p0",pod_uid="u0",probe_type="Readiness",result="successful"} 100
prober_probe_total{container="server",namespace="bench-flat-5",pod="p0",pod_uid="u0",probe_type="Liveness",result="successful"} 90
prober_probe_total{container="server",namespace="bench-flat-5",pod="p0",pod_uid="u0",probe_type="Startup",result="failed"} 2
prober_probe_total{container="agent",namespace="lace-system",pod="lace-x",pod_uid="u9",probe_type="Readiness",result="failed"} 7
prober_probe_duration_seconds_bucket{container="server",namespace="bench-flat-5",pod="p0",probe_type="Readiness",le="0.005"} 50
prober_probe_duration_seconds_bucket{container="server",namespace="bench-flat-5",pod="p0",probe_type="Readiness",le="0.01"} 90
prober_probe_duration_seconds_bucket{container="server",namespace="bench-flat-5",pod="p0",probe_type="Readiness",le="+Inf"} 100
prober_probe_duration_seconds_count{container="server",namespace="bench-flat-5",pod="p0",probe_type="Readiness"} 100
prober_probe_duration_seconds_sum{container="server",namespace="bench-flat-5",pod="p0",probe_type="Readiness"} 0.6
`;

Deno.test("the kubelet's probe metrics are read for one namespace only, by result", () => {
  const counts = probeCounts(parseSamples(METRICS), "bench-flat-5");
  assert.deepEqual(counts.byResult, { successful: 190, failed: 2 });
  assert.deepEqual(counts.byTypeAndResult, {
    "Readiness successful": 100,
    "Liveness successful": 90,
    "Startup failed": 2,
  });
  assert.equal(totalProbes(counts), 192);
  assert.equal(counts.durationCount, 100);
  // The agent's own failed readiness is not the bench pods'.
  assert.deepEqual(probeCounts(parseSamples(METRICS), "lace-system").byResult, { failed: 7 });
});

Deno.test("the hold's probes are the difference of two reads", () => {
  const before = probeCounts(parseSamples(METRICS), "bench-flat-5");
  const after = probeCounts(
    parseSamples(METRICS.replace("} 100\nprober_probe_total", "} 160\nprober_probe_total")),
    "bench-flat-5",
  );
  const delta = probeDelta(before, after);
  assert.deepEqual(delta.byResult, { successful: 60, failed: 0 });
});

Deno.test("single probes are timed by series whose count grew by one between two reads", () => {
  const read = (count: number, sum: number, otherCount: number) =>
    parseSamples([
      `prober_probe_duration_seconds_count{namespace="n",pod="p0",container="c",probe_type="Readiness"} ${count}`,
      `prober_probe_duration_seconds_sum{namespace="n",pod="p0",container="c",probe_type="Readiness"} ${sum}`,
      `prober_probe_duration_seconds_count{namespace="n",pod="p1",container="c",probe_type="Liveness"} ${otherCount}`,
      `prober_probe_duration_seconds_sum{namespace="n",pod="p1",container="c",probe_type="Liveness"} 1`,
      `prober_probe_duration_seconds_count{namespace="x",pod="p0",container="c",probe_type="Readiness"} ${count}`,
      `prober_probe_duration_seconds_sum{namespace="x",pod="p0",container="c",probe_type="Readiness"} ${sum}`,
    ].join("\n"));
  // p0 probed once (0.25 s); p1 twice, which says nothing of either probe alone.
  const durations = singleProbeDurations(read(10, 1, 5), read(11, 1.25, 7), "n");
  assert.deepEqual(durations, [0.25]);
  assert.deepEqual(singleProbeDurations(read(10, 1, 5), read(10, 1, 5), "n"), []);
});

Deno.test("quantiles are taken by nearest rank", () => {
  const values = Array.from({ length: 100 }, (_, i) => 100 - i);
  assert.equal(quantile(values, 0.5), 50);
  assert.equal(quantile(values, 0.99), 99);
  assert.equal(quantile([7], 0.99), 7);
  assert.ok(Number.isNaN(quantile([], 0.5)));
});

Deno.test("cpu.stat's usage_usec is read, and a file without it is refused by name", () => {
  assert.equal(cpuUsageUsec("usage_usec 1234\nuser_usec 1000\nsystem_usec 234\n"), 1234);
  assert.throws(() => cpuUsageUsec("user_usec 1\n"), /no usage_usec line/);
});

Deno.test("the exec column asks the same checks inside the container, the others over the network", () => {
  const base = { name: "p0", namespace: "n", node: "node", network: "iso-0", image: "img" };
  const flat = probedPod({ ...base, column: "flat" }).spec!.containers[0];
  assert.equal(flat.readinessProbe?.httpGet?.port, 8080);
  assert.equal(flat.startupProbe?.httpGet?.path, "/echo?msg=p0");
  assert.equal(flat.livenessProbe?.tcpSocket?.port, 8080);
  const exec = probedPod({ ...base, column: "exec" }).spec!.containers[0];
  for (const probe of [exec.startupProbe, exec.readinessProbe, exec.livenessProbe]) {
    assert.equal(probe?.httpGet, undefined);
    assert.equal(probe?.tcpSocket, undefined);
    assert.equal(probe?.periodSeconds, 1);
  }
  assert.deepEqual(exec.readinessProbe?.exec?.command, [
    "curl",
    "-fsS",
    "-o",
    "/dev/null",
    "http://127.0.0.1:8080/echo?msg=p0",
  ]);
  assert.equal(exec.livenessProbe?.exec?.command?.[1], "connect");
  const lace = probedPod({ ...base, column: "lace" });
  assert.equal(lace.metadata?.labels?.["lace-test.io/network"], "iso-0");
});

function column(
  name: ColumnMeasured["column"],
  pods: number,
  kubeletSeconds: number,
  failed: number,
  slow: boolean,
): ColumnMeasured {
  return {
    column: name,
    pods,
    holdSeconds: 120,
    readySeconds: 30,
    ready: pods,
    cpu: { kubelet: kubeletSeconds, runtime: 1, agent: 0, pods: 2 },
    probes: {
      byResult: { successful: 10_000 - failed, failed },
      byTypeAndResult: {},
      durationCount: 10_000,
      durationSum: 50,
    },
    durations: { samples: 1000, p50: 0.004, p99: slow ? 0.02 : 0.009 },
    failedBeforeReady: 3,
    restarts: 0,
  };
}

Deno.test("Lace is judged against flat in CPU per probe and p99, failures at 110 pods only", () => {
  const flat = column("flat", 110, 4, 0, false);
  assert.equal(nodeCpuPerThousand(flat), 500);
  const within = probeRowsAndGoals(
    [flat, column("exec", 110, 9, 1, true), column("lace", 110, 4.2, 0, false)],
    { judge: true, judgeFailuresAt: 110 },
  );
  const byName = (goals: typeof within.goals, part: string) =>
    goals.find((g) => g.name.includes(part))!;
  assert.equal(byName(within.goals, "CPU per probe").met, true);
  assert.equal(byName(within.goals, "p99").met, true);
  assert.equal(byName(within.goals, "exec probes").met, false);
  assert.equal(
    byName(within.goals, "exec probes").measured,
    "1 failed, 0 restarts, 110 of 110 Ready",
  );

  const over = probeRowsAndGoals(
    [flat, column("lace", 110, 5, 0, true)],
    { judge: true, judgeFailuresAt: 110 },
  );
  assert.equal(byName(over.goals, "CPU per probe").met, false);
  assert.match(byName(over.goals, "CPU per probe").measured, /^1\.20×/);
  assert.equal(byName(over.goals, "p99").met, false);
  // A miss on one column of each says it is a single draw, and how to judge on rounds.
  for (const part of ["CPU per probe", "p99"]) {
    assert.match(byName(over.goals, part).reason!, /^one column of each, .*--probe-rounds 3/);
  }
  const overInRounds = probeRowsAndGoals([
    { ...flat, round: 1 },
    { ...column("lace", 110, 5, 0, true), round: 1 },
    { ...column("lace", 110, 5, 0, true), round: 2 },
    { ...flat, round: 2 },
  ], { judge: true, judgeFailuresAt: 110 });
  assert.equal(byName(overInRounds.goals, "CPU per probe").reason, "measured above the goal");

  const small = probeRowsAndGoals([column("exec", 50, 9, 4, true)], {
    judge: true,
    judgeFailuresAt: 110,
  });
  assert.deepEqual(small.goals, []);
  const smoke = probeRowsAndGoals([flat, column("lace", 110, 9, 3, true)], {
    judge: false,
    judgeFailuresAt: 110,
  });
  assert.deepEqual(smoke.goals, []);
  assert.ok(smoke.rows.length > 0);
});

Deno.test("the probes figure runs only when named, with its pod counts and hold", () => {
  assert.deepEqual(parseArgs([]).probePods, [50, 110]);
  assert.equal(parseArgs([]).probeHoldSeconds, 120);
  assert.deepEqual(parseArgs(["--quick"]).probePods, [5]);
  const o = parseArgs(["--only", "probes", "--probe-pods", "50", "--probe-hold=60"]);
  assert.deepEqual([o.only, o.probePods, o.probeHoldSeconds], [["probes"], [50], 60]);
  assert.throws(() => parseArgs(["--probe-pods", "0"]), /positive whole numbers/);
  assert.throws(() => parseArgs(["--probe-hold", "-1"]), /positive number/);
});

Deno.test("columns in rounds are judged on their medians, and each round's ratio is shown", () => {
  const round = (m: ColumnMeasured, r: number): ColumnMeasured => ({ ...m, round: r });
  // Lace's rounds at 4.2, 4.4 and an outlier of 12 kubelet seconds; flat's at 4, 3.8 and 4.
  const r = probeRowsAndGoals([
    round(column("flat", 110, 4, 0, false), 1),
    round(column("lace", 110, 4.2, 0, false), 1),
    round(column("lace", 110, 12, 0, true), 2),
    round(column("flat", 110, 3.8, 0, false), 2),
    round(column("flat", 110, 4, 0, false), 3),
    round(column("lace", 110, 4.4, 0, false), 3),
  ], { judge: true, judgeFailuresAt: 110 });
  const cpu = r.goals.find((g) => g.name.includes("CPU per probe"))!;
  // Medians: Lace (4.4 + 1) s against flat (4 + 1) s per 10,000 probes; one slow round is not it.
  assert.equal(cpu.met, true);
  assert.equal(cpu.measured, "1.08× (540 vs 500 ms per 1,000, medians of 3 and 3 columns)");
  const p99 = r.goals.find((g) => g.name.includes("p99"))!;
  assert.equal(p99.met, true);
  assert.match(p99.measured, /^1\.00× \(9 ms vs 9 ms, medians of 3 and 3 columns\)$/);
  const byRound = r.rows.find((row) => row.measurement.includes("Lace / flat by round"))!;
  assert.equal(byRound.value, "1.04× and 1.00×; 2.71× and 2.22×; 1.08× and 1.00×");
  assert.ok(
    r.rows.some((row) =>
      row.measurement.includes("Lace (isolated networks, the chart's agent), round 2")
    ),
  );
});

Deno.test("the probes figure's rounds and columns are parsed, a bad one refused by its reason", () => {
  assert.equal(parseArgs([]).probeRounds, 1);
  assert.deepEqual(parseArgs([]).probeColumns, ["flat", "exec", "lace"]);
  const o = parseArgs(["--probe-rounds", "3", "--probe-columns=flat,lace"]);
  assert.deepEqual([o.probeRounds, o.probeColumns], [3, ["flat", "lace"]]);
  assert.throws(
    () => parseArgs(["--probe-rounds", "0"]),
    /--probe-rounds takes a positive whole number: "0"/,
  );
  assert.throws(() => parseArgs(["--probe-rounds", "1.5"]), /positive whole number/);
  assert.throws(
    () => parseArgs(["--probe-columns", "flat,host"]),
    /Unknown column "host" in --probe-columns: choose from flat,exec,lace/,
  );
});

Deno.test("a read of the kubelet's probe metrics that fails is tried again until its deadline", async () => {
  let calls = 0;
  const flaky = {
    connectGetNodeProxyWithPath: (param: { name: string; path: string }) => {
      calls++;
      assert.deepEqual(param, { name: "n1", path: "metrics/probes" });
      if (calls < 3) return Promise.reject(new Error(`timeout ${calls}`));
      return Promise.resolve(METRICS);
    },
  };
  const quick = { timeoutMs: 1000, intervalMs: 1 };
  const counts = await readProbes(flaky, "n1", "bench-flat-5", quick);
  assert.equal(calls, 3);
  assert.deepEqual(counts.byResult, { successful: 190, failed: 2 });

  calls = -1e9;
  await assert.rejects(
    () => probeSamples(flaky, "n1", { timeoutMs: 20, intervalMs: 1 }),
    (e: Error) => {
      assert.match(
        e.message,
        /^Timed out after 20 ms waiting for the kubelet's metrics\/probes on node n1, through the API server: timeout -\d+$/,
      );
      return true;
    },
  );
});
