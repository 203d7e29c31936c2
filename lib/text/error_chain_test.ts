import assert from "node:assert/strict";
import { errorChain } from "./error_chain.ts";

Deno.test("errorChain() prints each cause on its own line, the hint included", () => {
  const root = new Deno.errors.NotFound("No such file or directory (os error 2)");
  const hint = new Error('Cannot read the pods directory "/x": create it or fix --pods-dir', {
    cause: root,
  });
  const top = new Error('Pod source "dir" failed to start', { cause: hint });
  assert.equal(
    errorChain(top),
    [
      'Pod source "dir" failed to start',
      'caused by: Cannot read the pods directory "/x": create it or fix --pods-dir',
      "caused by: No such file or directory (os error 2)",
    ].join("\n"),
  );
});

Deno.test("errorChain() lists the errors inside an AggregateError", () => {
  const e = new AggregateError([new Error("a broke"), "b broke"], "cleanup failed");
  assert.equal(errorChain(e), "cleanup failed\n  - a broke\n  - b broke");
});

Deno.test("errorChain() prints a thrown non-Error and stops at a cause cycle", () => {
  assert.equal(errorChain("plain"), "plain");
  const a = new Error("a");
  const b = new Error("b", { cause: a });
  a.cause = b;
  assert.equal(errorChain(a), "a\ncaused by: b");
});

Deno.test("errorChain() escapes a message's escape sequences and newlines, one line per error", () => {
  const e = new Error("pod ns/web failed", { cause: new Error("answered \x1b]52;c;eA==\x07\nok") });
  assert.equal(errorChain(e), "pod ns/web failed\ncaused by: answered \\x1b]52;c;eA==\\x07\\x0aok");
});
