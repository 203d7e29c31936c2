import assert from "node:assert/strict";
import { POD_TEXT_LIMIT, tooLongError } from "../cluster/exec_output.ts";
import {
  firstJsonObject,
  formatBps,
  iperfDocument,
  MAX_BITS_PER_SECOND,
  parseIperf,
} from "./iperf_result.ts";

const ok = JSON.stringify({ start: { x: "{" }, end: { sum_received: { bits_per_second: 9.1e9 } } });

Deno.test("parseIperf() reads end.sum_received.bits_per_second", () => {
  assert.deepEqual(parseIperf({ exitCode: 0, stdout: ok, stderr: "" }), {
    ok: true,
    bitsPerSecond: 9.1e9,
  });
});

Deno.test("parseIperf() tolerates text after the JSON object", () => {
  const stdout = ok + "\niperf3: interrupt - the client has terminated {oops}\n";
  assert.deepEqual(parseIperf({ exitCode: 0, stdout, stderr: "" }), {
    ok: true,
    bitsPerSecond: 9.1e9,
  });
});

Deno.test("parseIperf() fails on an error key even when iperf3 exited 0", () => {
  const stdout = JSON.stringify({ start: {}, end: {}, error: "unable to connect to server" });
  const r = parseIperf({ exitCode: 0, stdout, stderr: "" });
  assert.deepEqual(r, {
    ok: false,
    message: "iperf3: unable to connect to server",
    retryable: false,
  });
});

Deno.test("parseIperf() marks a busy server and a reset connection as retryable", () => {
  const busy = JSON.stringify({
    error: "error - the server is busy running a test. try again later",
  });
  assert.equal(
    (parseIperf({ exitCode: 1, stdout: busy, stderr: "" }) as { retryable: boolean }).retryable,
    true,
  );
  const reset = JSON.stringify({
    error: "error - unable to receive results: Connection reset by peer",
  });
  assert.equal(
    (parseIperf({ exitCode: 1, stdout: reset, stderr: "" }) as { retryable: boolean }).retryable,
    true,
  );
});

Deno.test("parseIperf() reports missing output with stderr's first line", () => {
  const r = parseIperf({ exitCode: 1, stdout: "", stderr: "iperf3: error - boom\nmore" });
  assert.deepEqual(r, { ok: false, message: "iperf3: error - boom", retryable: false });
});

Deno.test("firstJsonObject() skips braces inside strings", () => {
  assert.equal(firstJsonObject('noise {"a":"}{\\"","b":{}} tail {"c":1}'), '{"a":"}{\\"","b":{}}');
  assert.equal(firstJsonObject('{"open": '), undefined);
});

const run = (exitCode: number, stdout: string, stderr = "", error?: string) =>
  parseIperf({ exitCode, stdout, stderr, ...(error ? { error } : {}) });

Deno.test("parseIperf() fails on a figure when iperf3 exited non-zero, with stderr or the code", () => {
  assert.deepEqual(run(1, ok, "warning: late\nmore"), {
    ok: false,
    message: "warning: late",
    retryable: false,
  });
  assert.deepEqual(run(2, ok), { ok: false, message: "iperf3 exit code 2", retryable: false });
});

Deno.test("parseIperf() wants a finite number as the figure", () => {
  for (const bps of ["9", null, undefined]) {
    const stdout = JSON.stringify({ end: { sum_received: { bits_per_second: bps } } });
    assert.deepEqual(run(0, stdout), {
      ok: false,
      message: "iperf3 output has no end.sum_received.bits_per_second",
      retryable: false,
    });
  }
  assert.deepEqual(run(0, JSON.stringify({})), {
    ok: false,
    message: "iperf3 output has no end.sum_received.bits_per_second",
    retryable: false,
  });
});

Deno.test("parseIperf() ignores an empty error key", () => {
  const stdout = JSON.stringify({ error: "", end: { sum_received: { bits_per_second: 5 } } });
  assert.deepEqual(run(0, stdout), { ok: true, bitsPerSecond: 5 });
});

Deno.test("parseIperf() falls back to stdout, then the exit code, when there is no JSON", () => {
  assert.deepEqual(run(1, "plain text\nmore"), {
    ok: false,
    message: "plain text",
    retryable: false,
  });
  assert.deepEqual(run(4, ""), { ok: false, message: "iperf3 exit code 4", retryable: false });
  assert.deepEqual(run(1, "{not json}"), { ok: false, message: "{not json}", retryable: false });
  assert.deepEqual(run(-1, "", "", "pod gone"), {
    ok: false,
    message: "exec failed: pod gone",
    retryable: false,
  });
  assert.deepEqual(run(1, "", "   "), { ok: false, message: "no output", retryable: false });
});

Deno.test("firstJsonObject() finds none without a brace, and reads escaped backslashes in strings", () => {
  assert.equal(firstJsonObject("no json here"), undefined);
  assert.equal(firstJsonObject('{"a":"\\\\"} x'), '{"a":"\\\\"}');
  assert.equal(firstJsonObject('x{"a":{"b":{}}}}'), '{"a":{"b":{}}}');
});

Deno.test("parseIperf() refuses an infinite figure and an end without sum_received", () => {
  const message = "iperf3 output has no end.sum_received.bits_per_second";
  for (const stdout of ['{"end":{"sum_received":{"bits_per_second":1e999}}}', '{"end":{}}']) {
    assert.deepEqual(run(0, stdout), { ok: false, message, retryable: false }, stdout);
  }
});

Deno.test("firstJsonObject() reads an empty string key", () => {
  assert.equal(firstJsonObject('{"":1} x'), '{"":1}');
});

Deno.test("parseIperf() fails a negative, huge or non-numeric bandwidth as BAD_ANSWER, never as a figure", () => {
  const answer = (bps: unknown) =>
    parseIperf({
      exitCode: 0,
      stdout: `{"end":{"sum_received":{"bits_per_second":${bps}}}}`,
      stderr: "",
    });
  for (const bps of [-9.1e9, 1e15, 1e308]) {
    const r = answer(bps);
    assert.equal(r.ok, false, `${bps} accepted`);
    assert.equal((r as { errorClass?: string }).errorClass, "BAD_ANSWER");
    assert.deepEqual(r, {
      ok: false,
      errorClass: "BAD_ANSWER",
      message: `iperf3 reported ${bps} bits/s, outside 0 to 100000000000000: not a figure to trust`,
      retryable: false,
    });
  }
  // JSON has no NaN or Infinity: 1e999 parses as Infinity, a string is not a number.
  for (const bps of ["1e999", '"NaN"', "null"]) assert.equal(answer(bps).ok, false);
  assert.deepEqual(answer(0), { ok: true, bitsPerSecond: 0 });
  assert.deepEqual(answer(MAX_BITS_PER_SECOND), { ok: true, bitsPerSecond: MAX_BITS_PER_SECOND });
});

Deno.test("iperfDocument() returns the JSON object after any warnings, else why there is none", () => {
  const doc = { end: { sum_received: { bits_per_second: 9.1e9 } } };
  const exec = (stdout: string, stderr = "", error?: string) =>
    iperfDocument({ exitCode: error ? -1 : 0, stdout, stderr, ...(error ? { error } : {}) });
  assert.deepEqual(exec(`warning: ignoring --udp\n${JSON.stringify(doc)}\n`), doc);
  assert.equal(exec(JSON.stringify(doc), "", "pod gone\nsecond line"), "exec failed: pod gone");
  assert.equal(
    exec("", "iperf3: error - unable to connect\nmore"),
    "no iperf3 JSON: iperf3: error - unable to connect",
  );
  assert.equal(exec("garbage {oops}\n"), "no iperf3 JSON: garbage {oops}");
  assert.equal(exec("out", "err"), "no iperf3 JSON: err");
  assert.equal(exec(""), "no iperf3 JSON: no output");
});

Deno.test("parseIperf() fails an exec cut at the output limit as TOO_LONG, without retrying", () => {
  const error = tooLongError(1 << 20);
  assert.deepEqual(parseIperf({ exitCode: -1, stdout: "{", stderr: "", error, tooLong: true }), {
    ok: false,
    errorClass: "TOO_LONG",
    message: error,
    retryable: false,
  });
});

Deno.test("parseIperf() reads the figure of an exec flagged too long that still ended without an error", () => {
  assert.deepEqual(parseIperf({ exitCode: 0, stdout: ok, stderr: "", tooLong: true }), {
    ok: true,
    bitsPerSecond: 9.1e9,
  });
});

Deno.test("parseIperf() keeps one line of at most POD_TEXT_LIMIT characters of an iperf3 error", () => {
  const stdout = JSON.stringify({ error: "busy".repeat(1_000_000) + "\nsecond line" });
  const r = parseIperf({ exitCode: 1, stdout, stderr: "" }) as { message: string };
  assert.ok(r.message.length < POD_TEXT_LIMIT + 40, `${r.message.length} characters`);
  assert.doesNotMatch(r.message, /second line/);
});

Deno.test("formatBps() scales to the right unit", () => {
  assert.equal(formatBps(9.41e9), "9.41 Gbit/s");
  assert.equal(formatBps(123e6), "123 Mbit/s");
  assert.equal(formatBps(500), "500 bit/s");
  assert.equal(formatBps(1000), "1.00 kbit/s");
  assert.equal(formatBps(100), "100 bit/s");
  assert.equal(formatBps(10), "10.0 bit/s");
  assert.equal(formatBps(45.67e3), "45.7 kbit/s");
  assert.equal(formatBps(2.5e12), "2.50 Tbit/s");
  // Past the last unit the figure grows instead.
  assert.equal(formatBps(1e16), "10000 Tbit/s");
});
