import assert from "node:assert/strict";
import { errorChainInline, errorLogText } from "./error_format.ts";

/** An error whose stack is exactly `frames` below its headline, as V8 writes it. */
function withStack(error: Error, frames: string[]): Error {
  error.stack = [`${error.name}: ${error.message}`, ...frames.map((f) => `    at ${f}`)].join("\n");
  return error;
}

Deno.test("errorLogText() puts the escaped message inline and the frames of Lace's code below", () => {
  const e = withStack(new Error("pod ns/web answered \r\nFAKE ERR line"), [
    "reconcile (file:///lace/lib/agent/core.ts:10:5)",
    "Object.op (ext:core/01_core.js:1:1)",
    "handle (file:///lace/node_modules/.deno/x/index.js:2:2)",
    "list (file:///lace/lib/kube/client_node.bundle.js:3:3)",
    "async Promise.all (index 0)",
    "file:///lace/main.ts:4:4",
  ]);
  assert.deepEqual(errorLogText(e), {
    inline: "Error: pod ns/web answered \\x0d\\x0aFAKE ERR line",
    lines: [
      "    at reconcile (file:///lace/lib/agent/core.ts:10:5)",
      "    at file:///lace/main.ts:4:4",
    ],
  });
});

Deno.test("errorLogText() reads no frame out of a message that imitates one", () => {
  const e = withStack(new Error("bad\n    at forged (file:///lace/lib/x.ts:1:1)"), [
    "real (file:///lace/lib/y.ts:2:2)",
  ]);
  assert.deepEqual(errorLogText(e).lines, ["    at real (file:///lace/lib/y.ts:2:2)"]);
});

Deno.test("errorLogText() lists each cause and aggregated error below, escaped, a cycle once", () => {
  const root = withStack(new TypeError("root\ncause"), ["read (file:///lace/lib/a.ts:1:1)"]);
  const agg = withStack(new AggregateError([root, "plain\x1b[2J"], "cleanup failed"), []);
  const top = withStack(new Error("start failed", { cause: agg }), []);
  root.cause = top;
  assert.deepEqual(errorLogText(top), {
    inline: "Error: start failed",
    lines: [
      "  caused by: AggregateError: cleanup failed",
      "    - TypeError: root\\x0acause",
      "        at read (file:///lace/lib/a.ts:1:1)",
      "    - plain\\x1b[2J",
    ],
  });
});

Deno.test("errorLogText() shows no frame when the stack no longer starts with the message", () => {
  // The stack was written, then the message changed (a wrapper adding context): the frames can
  // no longer be told apart from lines of the message that was written into the stack.
  const e = withStack(new Error("pod text\n    at forged (file:///lace/lib/x.ts:1:1)"), [
    "real (file:///lace/lib/y.ts:2:2)",
  ]);
  e.message = `while syncing: ${e.message}`;
  const { inline, lines } = errorLogText(e);
  assert.equal(
    inline,
    "Error: while syncing: pod text\\x0a    at forged (file:///lace/lib/x.ts:1:1)",
  );
  assert.deepEqual(lines, []);
});

Deno.test("errorLogText() writes an error whose message is not a string", () => {
  const e = new Error("x");
  (e as { message: unknown }).message = 42;
  assert.equal(errorLogText(e).inline, "Error: 42");
});

Deno.test("errorLogText() doubles a message's backslashes: its text cannot pass for an escape", () => {
  const e = withStack(new Error("one\\x0a    at two"), []);
  assert.equal(errorLogText(e).inline, "Error: one\\\\x0a    at two");
  assert.notEqual(errorLogText(e).inline, errorLogText(new Error("one\n    at two")).inline);
});

Deno.test("errorChainInline() writes a message and its causes on one line, a cycle once", () => {
  const inner = new Error("inner");
  const outer = new Error("outer", { cause: inner });
  inner.cause = outer;
  assert.equal(errorChainInline(outer), "outer; caused by: inner");
  const all = new AggregateError([new Error("a"), "b"], "both", { cause: "why" });
  assert.equal(errorChainInline(all), "both; - a; - b; caused by: why");
});
