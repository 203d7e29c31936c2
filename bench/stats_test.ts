import assert from "node:assert/strict";
import { median, percentile } from "./stats.ts";

Deno.test("percentile() picks the nearest rank", () => {
  const samples = Array.from({ length: 100 }, (_, i) => 100 - i);
  assert.equal(percentile(samples, 99), 99);
  assert.equal(percentile(samples, 100), 100);
  assert.equal(percentile(samples, 1), 1);
});

Deno.test("median() of an odd count is the middle sample", () => {
  assert.equal(median([5, 1, 3]), 3);
});

Deno.test("percentile() of no samples is NaN", () => {
  assert.ok(Number.isNaN(percentile([], 50)));
});
