import assert from "node:assert/strict";
import { getLogger } from "@logtape/logtape";
import { setupLogging } from "./setup.ts";

/** What one error record writes in `format`, split into lines (colour codes removed). */
function logged(format: "text" | "json", error: Error): string[] {
  const out: string[] = [];
  setupLogging("info", format, (bytes) => out.push(new TextDecoder().decode(bytes)));
  try {
    getLogger(["lace", "test"]).error("Pod {pod} failed: {error}", { pod: "ns/web", error });
  } finally {
    setupLogging("info", "json", () => {});
  }
  assert.equal(out.length, 1);
  // deno-lint-ignore no-control-regex
  return out[0].replace(/\x1b\[[0-9;]*m/g, "").split("\n").slice(0, -1);
}

function failing(): Error {
  return new Error("readiness answered \r\n05:00:00.000 ERR lace·agent: forged\u202e");
}

Deno.test("a text log keeps a pod's CR/LF in an error message escaped on the record's line", () => {
  const [line] = logged("text", failing());
  assert.match(line, /ERR lace·test: Pod "ns\/web" failed: Error: readiness answered /);
  assert.ok(line.endsWith("\\x0d\\x0a05:00:00.000 ERR lace·agent: forged\\u202e"), line);
});

Deno.test("a text log prints an error's stack frames below the record, one indented line each", () => {
  const [, ...below] = logged("text", failing());
  assert.ok(below.length >= 2, JSON.stringify(below));
  assert.match(below[0], /^ {4}at failing \(file:\/\/.*\/lib\/log\/setup_test\.ts:\d+:\d+\)$/);
  for (const line of below) assert.match(line, /^ {4}at /);
});

Deno.test("a JSON log writes an error record as one line, its message exact", () => {
  const lines = logged("json", failing());
  assert.equal(lines.length, 1);
  const record = JSON.parse(lines[0]);
  assert.equal(record.properties.error.message, failing().message);
});
