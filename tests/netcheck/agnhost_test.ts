import assert from "node:assert/strict";
import { parseGoDuration, splitHostPort } from "./agnhost.ts";

Deno.test("parseGoDuration() reads Go durations and rejects other text", () => {
  assert.equal(parseGoDuration("5s"), 5000);
  assert.equal(parseGoDuration("1500ms"), 1500);
  assert.equal(parseGoDuration("1m30s"), 90_000);
  assert.equal(parseGoDuration("0"), 0);
  assert.equal(parseGoDuration("5"), undefined);
  assert.equal(parseGoDuration(""), undefined);
});

Deno.test("splitHostPort() splits like Go's net.SplitHostPort, brackets included", () => {
  assert.deepEqual(splitHostPort("10.0.0.1:1199"), ["10.0.0.1", "1199"]);
  assert.deepEqual(splitHostPort("[fd00::1]:1199"), ["fd00::1", "1199"]);
  assert.throws(() => splitHostPort("10.0.0.1"), /missing port in address/);
  assert.throws(() => splitHostPort("fd00::1:1199"), /too many colons in address/);
  assert.throws(() => splitHostPort("[fd00::1:1199"), /missing ']' in address/);
});
