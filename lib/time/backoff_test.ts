import assert from "node:assert/strict";
import { backoffDelay } from "./backoff.ts";

Deno.test("backoffDelay() doubles from the initial delay up to the cap", () => {
  const backoff = { initialMs: 100, maxMs: 1000 };
  assert.deepEqual([1, 2, 3, 4, 5, 10].map((n) => backoffDelay(n, backoff)), [
    100,
    200,
    400,
    800,
    1000,
    1000,
  ]);
});

Deno.test("backoffDelay() without jitter never asks the random source", () => {
  const random = () => {
    throw new Error("not called");
  };
  assert.equal(backoffDelay(2, { initialMs: 500, maxMs: 30_000 }, random), 1000);
});

Deno.test("backoffDelay() with equal jitter lies between half and all of the delay", () => {
  const backoff = { initialMs: 100, maxMs: 1000, jitter: 0.5 };
  assert.equal(backoffDelay(1, backoff, () => 1), 100);
  assert.equal(backoffDelay(1, backoff, () => 0), 50);
  assert.equal(backoffDelay(3, backoff, () => 0.5), 300);
  assert.equal(backoffDelay(10, backoff, () => 1), 1000);
  assert.equal(backoffDelay(10, backoff, () => 0), 500);
});
