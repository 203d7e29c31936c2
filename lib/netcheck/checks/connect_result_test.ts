import assert from "node:assert/strict";
import { classifyConnect } from "./connect_result.ts";
import { POD_TEXT_LIMIT, tooLongError } from "../cluster/exec_output.ts";

const run = (exitCode: number, stderr: string, error?: string) =>
  classifyConnect({ exitCode, stdout: "", stderr, ...(error ? { error } : {}) });

Deno.test("classifyConnect() treats exit code 0 as a connected path", () => {
  assert.deepEqual(run(0, ""), { ok: true });
});

Deno.test("classifyConnect() keeps agnhost's error class and detail from stderr", () => {
  assert.deepEqual(run(1, "TIMEOUT\n"), { ok: false, errorClass: "TIMEOUT", message: "TIMEOUT" });
  assert.deepEqual(run(1, "REFUSED\n"), { ok: false, errorClass: "REFUSED", message: "REFUSED" });
  assert.deepEqual(run(1, "DNS: lookup x: no such host\n"), {
    ok: false,
    errorClass: "DNS",
    message: "lookup x: no such host",
  });
  assert.deepEqual(run(1, "OTHER: dial tcp 10.0.0.1:1199: connect: no route to host\n"), {
    ok: false,
    errorClass: "OTHER",
    message: "dial tcp 10.0.0.1:1199: connect: no route to host",
  });
  assert.equal(
    (run(1, "UNKNOWN: missing port in address") as { errorClass: string }).errorClass,
    "UNKNOWN",
  );
});

Deno.test("classifyConnect() strips only the spaces after a class, not the detail's first word", () => {
  assert.deepEqual(run(1, "TIMEOUT:dial tcp 10.0.0.1:80: i/o timeout\n"), {
    ok: false,
    errorClass: "TIMEOUT",
    message: "dial tcp 10.0.0.1:80: i/o timeout",
  });
  assert.deepEqual(run(1, "REFUSED\nsecond line"), {
    ok: false,
    errorClass: "REFUSED",
    message: "REFUSED",
  });
});

Deno.test("classifyConnect() files unrecognised output and exec failures under UNKNOWN", () => {
  assert.deepEqual(run(127, "exec: /agnhost: not found\n"), {
    ok: false,
    errorClass: "UNKNOWN",
    message: "exec: /agnhost: not found",
  });
  assert.deepEqual(run(-1, "", "pod gone"), {
    ok: false,
    errorClass: "UNKNOWN",
    message: "exec failed: pod gone",
  });
});

Deno.test("classifyConnect() reads a class only as a whole word at the start of stderr", () => {
  assert.deepEqual(run(1, "TIMEOUTS happen"), {
    ok: false,
    errorClass: "UNKNOWN",
    message: "TIMEOUTS happen",
  });
  assert.deepEqual(run(1, "see REFUSED"), {
    ok: false,
    errorClass: "UNKNOWN",
    message: "see REFUSED",
  });
  assert.deepEqual(run(1, "  REFUSED:   port closed\nsecond line"), {
    ok: false,
    errorClass: "REFUSED",
    message: "port closed",
  });
});

Deno.test("classifyConnect() names the exit code when a failure leaves stderr empty", () => {
  assert.deepEqual(run(3, "  \n"), { ok: false, errorClass: "UNKNOWN", message: "exit code 3" });
  assert.deepEqual(run(3, "first\nsecond"), { ok: false, errorClass: "UNKNOWN", message: "first" });
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
    {
      ok: false,
      errorClass: "TOO_LONG",
      message: error,
    },
  );
});
