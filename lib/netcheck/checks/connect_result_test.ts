import assert from "node:assert/strict";
import { classifyConnect } from "./connect_result.ts";
import { POD_TEXT_LIMIT, tooLongError } from "../cluster/exec_output.ts";

const run = (exitCode: number, stderr: string, error?: string) =>
  classifyConnect({ exitCode, stdout: "", stderr, ...(error ? { error } : {}) });

/** The failure classifyConnect() reports: `errorClass` and the detail shown for it. */
const failed = (errorClass: string, message: string) => ({ ok: false, errorClass, message });

/** Checks each [stderr, class, detail] case of a failed connect (exit code 1). */
function assertFailures(cases: [string, string, string][]) {
  for (const [stderr, errorClass, message] of cases) {
    assert.deepEqual(run(1, stderr), failed(errorClass, message), JSON.stringify(stderr));
  }
}

Deno.test("classifyConnect() treats exit code 0 as a connected path", () => {
  assert.deepEqual(run(0, ""), { ok: true });
});

Deno.test("classifyConnect() keeps agnhost's error class and detail from stderr", () => {
  assertFailures([
    ["TIMEOUT\n", "TIMEOUT", "TIMEOUT"],
    ["REFUSED\n", "REFUSED", "REFUSED"],
    ["DNS: lookup x: no such host\n", "DNS", "lookup x: no such host"],
    [
      "OTHER: dial tcp 10.0.0.1:1199: connect: no route to host\n",
      "OTHER",
      "dial tcp 10.0.0.1:1199: connect: no route to host",
    ],
  ]);
  assert.equal(
    (run(1, "UNKNOWN: missing port in address") as { errorClass: string }).errorClass,
    "UNKNOWN",
  );
});

Deno.test("classifyConnect() strips only the spaces after a class, not the detail's first word", () => {
  assertFailures([
    ["TIMEOUT:dial tcp 10.0.0.1:80: i/o timeout\n", "TIMEOUT", "dial tcp 10.0.0.1:80: i/o timeout"],
    ["REFUSED\nsecond line", "REFUSED", "REFUSED"],
  ]);
});

Deno.test("classifyConnect() files unrecognised output and exec failures under UNKNOWN", () => {
  assert.deepEqual(
    run(127, "exec: /agnhost: not found\n"),
    failed("UNKNOWN", "exec: /agnhost: not found"),
  );
  assert.deepEqual(run(-1, "", "pod gone"), failed("UNKNOWN", "exec failed: pod gone"));
});

Deno.test("classifyConnect() reads a class only as a whole word at the start of stderr", () => {
  assertFailures([
    ["TIMEOUTS happen", "UNKNOWN", "TIMEOUTS happen"],
    ["see REFUSED", "UNKNOWN", "see REFUSED"],
    ["  REFUSED:   port closed\nsecond line", "REFUSED", "port closed"],
  ]);
});

Deno.test("classifyConnect() names the exit code when a failure leaves stderr empty", () => {
  assert.deepEqual(run(3, "  \n"), failed("UNKNOWN", "exit code 3"));
  assert.deepEqual(run(3, "first\nsecond"), failed("UNKNOWN", "first"));
});

Deno.test("classifyConnect() keeps at most POD_TEXT_LIMIT characters of a megabyte stderr line", () => {
  for (const stderr of ["OTHER: " + "e".repeat(1 << 20), "x".repeat(1 << 20)]) {
    const r = run(1, stderr) as { message: string };
    assert.ok(r.message.length < POD_TEXT_LIMIT + 40, `${r.message.length} characters`);
  }
});

Deno.test("classifyConnect() fails an exec cut at the output limit as TOO_LONG", () => {
  const error = tooLongError(1 << 20);
  assert.deepEqual(
    classifyConnect({ exitCode: -1, stdout: "", stderr: "", error, tooLong: true }),
    failed("TOO_LONG", error),
  );
});
