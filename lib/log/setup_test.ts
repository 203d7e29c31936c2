import assert from "node:assert/strict";
import { getLogger } from "@logtape/logtape";
import { logColour, setupLogging } from "./setup.ts";

/** The one record `log` writes in `format`, as written. */
function written(format: "text" | "json", colour: boolean, log: () => void): string {
  const out: string[] = [];
  setupLogging("info", format, (bytes) => out.push(new TextDecoder().decode(bytes)), colour);
  try {
    log();
  } finally {
    setupLogging("info", "json", () => {});
  }
  assert.equal(out.length, 1);
  return out[0];
}

/** What one error record writes in `format`, split into lines (colour codes removed). */
function logged(format: "text" | "json", error: Error): string[] {
  const out: string[] = [];
  setupLogging("info", format, (bytes) => out.push(new TextDecoder().decode(bytes)), true);
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

Deno.test("logColour() colours a terminal only, and never with NO_COLOR set", () => {
  assert.equal(logColour(true, undefined), true);
  assert.equal(logColour(true, ""), true, "an empty NO_COLOR is not set (no-color.org)");
  assert.equal(logColour(true, "1"), false);
  assert.equal(logColour(false, undefined), false);
});

Deno.test("a text log without colour has no escape code and the coloured layout", () => {
  const warn = () => getLogger(["lace", "test"]).warn("Pod {pod} skipped", { pod: "ns/web" });
  const plain = written("text", false, warn);
  assert.ok(!plain.includes("\x1b"), JSON.stringify(plain));
  assert.match(plain, /^\d\d:\d\d:\d\d\.\d{3} WRN lace·test: Pod "ns\/web" skipped\n$/);
  const coloured = written("text", true, warn);
  assert.ok(coloured.includes("\x1b["), JSON.stringify(coloured));
  const untimed = (line: string) => line.replace(/^\S+ /, "");
  // deno-lint-ignore no-control-regex
  assert.equal(untimed(coloured.replace(/\x1b\[[0-9;]*m/g, "")), untimed(plain));
});

Deno.test("a JSON log's message shows an error's message and causes, not {}", () => {
  const error = new Error("Pod source failed", { cause: new TypeError("bad manifest") });
  const line = written("json", false, () => {
    getLogger(["lace", "test"]).error("Stopped: {error}", { error });
  });
  const record = JSON.parse(line);
  assert.equal(record.message, 'Stopped: "Pod source failed; caused by: bad manifest"');
  assert.equal(record.properties.error.message, "Pod source failed");
  assert.equal(record.properties.error.cause.message, "bad manifest");
});
