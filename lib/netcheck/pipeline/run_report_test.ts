import assert from "node:assert/strict";
import { JsonReport, JunitReport } from "../report/formats.ts";
import { runChecks } from "./run.ts";
import { fakeNodes, MemoryCluster } from "../../../tests/netcheck/memory_cluster.ts";
import { options, quiet } from "../../../tests/netcheck/run_fixture.ts";

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

Deno.test("the JUnit report has a test case for every path of a run, however many finish at once", async () => {
  const dir = await Deno.makeTempDir();
  try {
    let text = "";
    const file = `${dir}/netcheck.xml`;
    await runChecks(options({ concurrency: 16 }), {
      cluster: new MemoryCluster(fakeNodes(5)),
      progress: quiet,
      sinks: [new JsonReport((t) => text += t), new JunitReport(file)],
      pollMs: 1,
    });
    const paths = JSON.parse(text).paths.length;
    assert.equal(paths, 60);
    const xml = await Deno.readTextFile(file);
    assert.equal((xml.match(/<testcase /g) ?? []).length, paths);
    assert.match(
      xml,
      new RegExp(`<testsuites name="lace netcheck" tests="${paths}" failures="0">`),
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
