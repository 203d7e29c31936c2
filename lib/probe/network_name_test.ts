import assert from "node:assert/strict";
import { MAX_NETWORK_NAME, networkNameProblem, quotedAtMost80 } from "./network_name.ts";

Deno.test("networkNameProblem() takes 1..253 printable characters, counted as code points", () => {
  for (const name of ["b", "blå", "x".repeat(MAX_NETWORK_NAME), "🦕".repeat(MAX_NETWORK_NAME)]) {
    assert.equal(networkNameProblem(name), null, name);
  }
});

Deno.test("networkNameProblem() says what a name breaks, quoting it", () => {
  assert.equal(
    networkNameProblem("blue net"),
    `must be 1..253 printable characters without spaces: "blue net" (8 characters)`,
  );
  assert.match(networkNameProblem("")!, /: "" \(0 characters\)$/);
  assert.match(networkNameProblem("x".repeat(254))!, /\(254 characters\)$/);
});

Deno.test("networkNameProblem() refuses what is not a string, quoting it", () => {
  assert.equal(
    networkNameProblem(5),
    "must be a string of 1..253 printable characters without spaces: 5",
  );
  assert.match(networkNameProblem(undefined)!, /: undefined$/);
});

Deno.test("quotedAtMost80() quotes up to 80 characters whole, and cuts a longer text after 80", () => {
  assert.equal(quotedAtMost80('7" x'), '"7\\" x"');
  assert.equal(quotedAtMost80("🦕".repeat(80)), `"${"🦕".repeat(80)}"`);
  assert.equal(quotedAtMost80("🦕".repeat(81)), `"${"🦕".repeat(80)}…"`);
});
