import assert from "node:assert/strict";
import { parseGoDuration } from "./agnhost.ts";

Deno.test("parseGoDuration() reads Go durations and rejects other text", () => {
  assert.equal(parseGoDuration("5s"), 5000);
  assert.equal(parseGoDuration("1500ms"), 1500);
  assert.equal(parseGoDuration("1m30s"), 90_000);
  assert.equal(parseGoDuration("0"), 0);
  assert.equal(parseGoDuration("5"), undefined);
  assert.equal(parseGoDuration(""), undefined);
});
