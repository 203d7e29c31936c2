import assert from "node:assert/strict";
import { firstJsonObject, parseIperf } from "./iperf_result.ts";

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
