import assert from "node:assert/strict";
import {
  ExecOutput,
  POD_TEXT_LIMIT,
  podLine,
  tooLongError,
  tooLongOutcome,
} from "./exec_output.ts";

const bytes = (text: string) => new TextEncoder().encode(text);

Deno.test("ExecOutput keeps both streams up to the limit and drops everything from the chunk that crosses it", () => {
  const out = new ExecOutput(10);
  assert.equal(out.add("stdout", bytes("host")), true);
  assert.equal(out.add("stderr", bytes("warn")), true);
  assert.equal(out.add("stdout", bytes("name-and-more")), false);
  assert.equal(out.tooLong, true);
  // Later chunks are dropped too, even small ones: the session is being closed.
  assert.equal(out.add("stdout", bytes("x")), false);
  assert.equal(out.bytes, 8);
  assert.deepEqual(out.text(), { stdout: "host", stderr: "warn" });
});

Deno.test("ExecOutput decodes a character split across chunks", () => {
  const out = new ExecOutput();
  const euro = bytes("€");
  out.add("stdout", euro.subarray(0, 1));
  out.add("stdout", euro.subarray(1));
  assert.deepEqual(out.text(), { stdout: "€", stderr: "" });
  assert.equal(out.tooLong, false);
});

Deno.test("tooLongOutcome() fails a cut exec as TOO_LONG and leaves others to the parser", () => {
  const error = tooLongError(1 << 20);
  assert.deepEqual(tooLongOutcome({ exitCode: -1, stdout: "", stderr: "", error, tooLong: true }), {
    ok: false,
    errorClass: "TOO_LONG",
    message: error,
  });
  assert.equal(
    tooLongOutcome({ exitCode: -1, stdout: "", stderr: "", error: "pod gone" }),
    undefined,
  );
});

Deno.test("podLine() keeps the first line that is not blank, cut to POD_TEXT_LIMIT characters", () => {
  assert.equal(podLine("\n  \n  unable to connect  \nsecond"), "unable to connect");
  assert.equal(podLine(""), "");
  const long = podLine("x".repeat(5_000_000));
  assert.equal(long, `${"x".repeat(POD_TEXT_LIMIT)}… (cut at ${POD_TEXT_LIMIT} characters)`);
  // Never between the halves of a surrogate pair.
  const emoji = podLine("x".repeat(POD_TEXT_LIMIT - 1) + "😀".repeat(10));
  assert.ok(emoji.startsWith("x".repeat(POD_TEXT_LIMIT - 1) + "…"), emoji);
});
