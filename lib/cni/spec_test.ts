/**
 * Unit tests of what every part of the spec shares: version order and the
 * CNI error.
 */
import assert from "node:assert/strict";
import { CniError, compareVersions, errorResult } from "./spec.ts";

Deno.test("compareVersions() compares numerically", () => {
  assert.equal(compareVersions("0.10.0", "0.4.0"), 1);
  assert.equal(compareVersions("1.0.0", "1.0.0"), 0);
  assert.equal(compareVersions("0.3.1", "0.4.0"), -1);
});

Deno.test("CniError is named so and has empty details unless given", () => {
  const e = new CniError(7, "bad");
  assert.deepEqual([e.name, e.code, e.message, e.details], ["CniError", 7, "bad", ""]);
  assert.deepEqual(errorResult(e, "1.0.0"), { cniVersion: "1.0.0", code: 7, msg: "bad" });
});
