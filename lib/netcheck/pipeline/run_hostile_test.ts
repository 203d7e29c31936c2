/**
 * A whole run over the in-memory cluster where pods answer as attackers would: escape sequences,
 * XML and JSON breakers, NUL and noncharacters in error texts, a hostname with a terminal escape,
 * an endless answer, a negative and a huge bandwidth. Every sink (text report, JSON, JUnit XML,
 * metrics) must stay readable and the summary's figures sane.
 */
import assert from "node:assert/strict";
import type { ExecResult } from "../cluster/netcheck_cluster.ts";
import { ExecOutput, POD_TEXT_LIMIT, tooLongError } from "../cluster/exec_output.ts";
import { NetcheckMetrics } from "../report/metrics.ts";
import { JsonReport, JunitReport, textReport } from "../report/formats.ts";
import { runChecks } from "./run.ts";
import { fakeNodes, MemoryCluster } from "../../../tests/netcheck/memory_cluster.ts";
import { options, quiet } from "../../../tests/netcheck/run_fixture.ts";

/** Clear screen, carriage return, NUL, OSC 52, C1 CSI, bidi, markup of XML and JSON, then length. */
const HOSTILE = '\x1b[2J\r\u0000\x1b]52;c;ZXZpbA==\x07\u009b8m\u202e\uffff</testcase>"}' +
  "A".repeat(2_000_000) + "\nsecond line";

/** A terminal acts on, or does not show as itself, any of these. */
const UNSAFE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]|\p{Cs}/u;
const NOT_XML_CHAR = /[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\u{10000}-\u{10ffff}]/u;

/** What a pod printing without end leaves netcheck with: the adapter's cut (kube_adapter.ts). */
function endless(): ExecResult {
  const out = new ExecOutput();
  const chunk = new TextEncoder().encode("B".repeat(64 * 1024));
  while (out.add("stdout", chunk));
  return { exitCode: -1, ...out.text(), error: tooLongError(out.limit), tooLong: true };
}

/** The hostile answers, by source node (fakeNodes(4): node-0000 … node-0003). */
function rewrite(answer: ExecResult, exec: { pod: string; container: string; command: string[] }) {
  const from = exec.pod.slice(-9);
  const to = exec.command.join(" ");
  const isCurl = exec.command[0] === "curl" && !to.includes("/echo");
  if (from === "node-0000" && exec.command[0] === "/agnhost" && to.includes("10.0.1.2")) {
    return { exitCode: 1, stdout: "", stderr: `OTHER: ${HOSTILE}` };
  }
  if (from === "node-0001" && isCurl && to.includes("10.0.2.2")) {
    return { ...answer, stdout: answer.stdout.replace(/^[^\n]*/, `\x1b[2J${exec.pod}`) };
  }
  if (from === "node-0002" && isCurl && to.includes("10.0.3.2")) return endless();
  if (exec.container === "bandwidth" && exec.command.includes("-t")) {
    if (from === "node-0000" && to.includes("10.0.2.2")) {
      return { exitCode: 1, stdout: JSON.stringify({ error: HOSTILE }), stderr: "" };
    }
    if (from === "node-0003" && to.includes("10.0.0.2")) {
      return {
        exitCode: 0,
        stdout: '{"end":{"sum_received":{"bits_per_second":-4e9}}}',
        stderr: "",
      };
    }
    if (from === "node-0003" && to.includes("10.0.1.2")) {
      return {
        exitCode: 0,
        stdout: '{"end":{"sum_received":{"bits_per_second":1e308}}}',
        stderr: "",
      };
    }
  }
  return answer;
}

Deno.test("a run where pods answer as attackers keeps every report readable and every figure sane", async () => {
  const dir = await Deno.makeTempDir();
  try {
    let json = "";
    const junitFile = `${dir}/netcheck.xml`;
    const metrics = new NetcheckMetrics(50);
    const cluster = new MemoryCluster(fakeNodes(4), { rewrite });
    const { summary, outcome } = await runChecks(options(), {
      cluster,
      progress: quiet,
      sinks: [
        new JsonReport((t) => json += t),
        new JunitReport(junitFile),
        { path: (r) => metrics.observe(r), finish: () => Promise.resolve() },
      ],
      runId: "hostile1",
      pollMs: 1,
      retryDelayMs: 1,
    });
    assert.equal(outcome.status, "failed");
    const doc = JSON.parse(json);
    const failed = (phase: string, from: string, to: string) =>
      doc.paths.find((p: { phase: string; from: string; to: string; ok: boolean }) =>
        p.phase === phase && p.from === from && p.to === to && !p.ok
      );
    // Each hostile answer fails its own path with a class that says what was wrong.
    assert.equal(failed("connect", "node-0000", "node-0001").errorClass, "OTHER");
    assert.equal(failed("latency", "node-0001", "node-0002").errorClass, "BAD_ANSWER");
    assert.equal(failed("latency", "node-0002", "node-0003").errorClass, "TOO_LONG");
    assert.equal(failed("bandwidth", "node-0000", "node-0002").errorClass, "IPERF");
    assert.equal(failed("bandwidth", "node-0003", "node-0000").errorClass, "BAD_ANSWER");
    assert.equal(failed("bandwidth", "node-0003", "node-0001").errorClass, "BAD_ANSWER");
    // No message is as long as the answer.
    for (const p of doc.paths) {
      assert.ok((p.message ?? "").length < POD_TEXT_LIMIT + 200, `${p.phase} ${p.from}→${p.to}`);
    }
    // The summary holds only real figures: the forged ones never entered it.
    // 12 paths, one not connected, three forged.
    assert.equal(summary.measured, 12 - 1 - 3);
    assert.ok(summary.minBps > 0 && summary.maxBps <= 1e14, `${summary.minBps} ${summary.maxBps}`);
    assert.ok(Number.isFinite(summary.totalBps));
    assert.equal(doc.summary.bandwidth.minBitsPerSecond, summary.minBps);

    // Text report: every escape shown, none acted on; no line as long as the answer.
    const text = textReport(summary, outcome);
    const raw = text.replaceAll("\n", "").match(UNSAFE);
    assert.equal(raw, null, `text report prints ${JSON.stringify(raw?.[0])} raw`);
    assert.ok(text.includes("\\x1b[2J\\x0d\\x00\\x1b]52;c;"), text);
    assert.ok(text.split("\n").every((l) => l.length < 1000), "a line as long as the answer");
    // JSON: one document, nothing a terminal acts on.
    assert.equal(json.replaceAll("\n", "").match(UNSAFE), null);
    // JUnit: only XML characters, only the report's own test cases.
    const xml = await Deno.readTextFile(junitFile);
    assert.equal(xml.match(NOT_XML_CHAR), null);
    assert.equal((xml.match(/<testcase /g) ?? []).length, doc.paths.length);
    assert.equal((xml.match(/<\/testcase>/g) ?? []).length, doc.paths.length);
    // Metrics: the forged bandwidths are in no histogram.
    metrics.endRound({ nodes: summary.nodes, networks: [], failed: true }, 1, false);
    const exposition = await metrics.registry.metrics();
    assert.match(
      exposition,
      /^lace_netcheck_bandwidth_bytes_per_second_count\{network="default"\} 8$/m,
    );
    assert.doesNotMatch(exposition, /_sum\{network="default"\} (-|Infinity|\+Inf|NaN)/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
