import assert from "node:assert/strict";
import { tooLongError } from "../cluster/exec_output.ts";
import { latencyCommand, nearestRank, parseLatency, percentiles, worstP99 } from "./latency.ts";

const answer = (
  body: string,
  code = "200",
  connects = "1",
  c = "0.000200",
  p = "0.000250",
  f = "0.000600",
) => `${body}\nLACE ${code} ${connects} ${c} ${p} ${f}\n`;
const ok = (stdout: string) => ({ exitCode: 0, stdout, stderr: "" });

Deno.test("nearestRank() picks the smallest sample covering the quantile", () => {
  const s = Array.from({ length: 100 }, (_, i) => i + 1);
  assert.equal(nearestRank(s, 0.5), 50);
  assert.equal(nearestRank(s, 0.99), 99);
  assert.equal(nearestRank(s, 1), 100);
  assert.equal(nearestRank([7], 0.5), 7);
  assert.throws(() => nearestRank([], 0.5), new RangeError("no samples"));
});

Deno.test("percentiles() of unsorted samples: p50, p99 and max", () => {
  assert.deepEqual(percentiles([5, 1, 3, 2, 4]), { p50: 3, p99: 5, max: 5 });
  // With 10 samples p99 is the largest: one slow sample is never hidden.
  assert.deepEqual(percentiles([1, 1, 1, 1, 1, 1, 1, 1, 1, 40]), { p50: 1, p99: 40, max: 40 });
  const many = Array.from({ length: 1000 }, (_, i) => 1000 - i);
  assert.deepEqual(percentiles(many), { p50: 500, p99: 990, max: 1000 });
});

Deno.test("latencyCommand() asks for one URL per sample on new connections", () => {
  const cmd = latencyCommand("http://[fd00::1]:1199/hostname", 3, 2500);
  assert.equal(cmd[0], "curl");
  assert.ok(cmd.includes("--globoff"), "IPv6 brackets must not be read as a glob");
  assert.ok(cmd.includes("Connection: close"));
  assert.equal(cmd.filter((a) => a === "http://[fd00::1]:1199/hostname").length, 3);
  assert.equal(cmd[cmd.indexOf("--max-time") + 1], "2.500");
});

Deno.test("parseLatency() turns curl's timings into connect and request percentiles (ms)", () => {
  const out = answer("pod-b", "200", "1", "0.000100", "0.000150", "0.000350") +
    answer("pod-b", "200", "1", "0.000300", "0.000300", "0.001300") +
    answer("pod-b", "200", "1", "0.000200", "0.000200", "0.000400");
  const r = parseLatency(ok(out), 3);
  assert.ok(r.ok);
  assert.equal(r.identity, "pod-b");
  assert.equal(r.figures.samples, 3);
  assert.deepEqual(
    Object.values(r.figures.connect).map((v) => Math.round(v * 1000)),
    [200, 300, 300],
  );
  assert.deepEqual(
    Object.values(r.figures.request).map((v) => Math.round(v * 1000)),
    [200, 1000, 1000],
  );
  assert.equal(Math.round(worstP99(r.figures) * 1000), 1000);
});

Deno.test("parseLatency() fails a sample without an answer as TIMEOUT", () => {
  const r = parseLatency(ok(answer("pod-b") + answer("", "000", "0", "0.000000")), 2);
  assert.deepEqual(r, { ok: false, errorClass: "TIMEOUT", message: "sample 2 of 2 got no answer" });
});

Deno.test("parseLatency() rejects answers a hostile pod could shape", () => {
  const cases: [string, string, RegExp][] = [
    // A body with a newline that forges a timing line changes the line count.
    ["injected line", answer("pod-b\nLACE 200 1 0.000001 0.000001 0.000001"), /lines/],
    ["not a pod name", answer("<script>"), /no pod name/],
    ["two pods answer", answer("pod-b") + answer("pod-c"), /different pods/],
    ["a reused connection", answer("pod-b") + answer("pod-b", "200", "0"), /reused/],
    ["an HTTP error", answer("pod-b") + answer("pod-b", "404"), /HTTP 404/],
    ["a non-number", answer("pod-b") + answer("pod-b", "200", "1", "1e9"), /malformed/],
  ];
  for (const [what, stdout, message] of cases) {
    const samples = stdout.split("\n").length > 3 ? 2 : 1;
    const r = parseLatency(ok(stdout), what === "injected line" ? 1 : samples);
    assert.ok(!r.ok, what);
    assert.equal(r.errorClass, "BAD_ANSWER", what);
    assert.match(r.message, message, what);
  }
});

Deno.test("parseLatency() names a missing curl and a failed exec", () => {
  const noCurl = parseLatency({ exitCode: 127, stdout: "", stderr: "sh: curl: not found" }, 3);
  assert.equal(noCurl.ok ? "" : noCurl.errorClass, "NO_CURL");
  const failed = parseLatency({ exitCode: -1, stdout: "", stderr: "", error: "timed out" }, 3);
  assert.deepEqual(failed, { ok: false, errorClass: "UNKNOWN", message: "exec failed: timed out" });
});

Deno.test("parseLatency() fails an exec cut at the output limit as TOO_LONG", () => {
  const error = tooLongError(1 << 20);
  const stdout = "x".repeat(1000);
  assert.deepEqual(parseLatency({ exitCode: -1, stdout, stderr: "", error, tooLong: true }, 3), {
    ok: false,
    errorClass: "TOO_LONG",
    message: error,
  });
});
