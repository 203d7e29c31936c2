import assert from "node:assert/strict";
import { TokenBuckets } from "./token_buckets.ts";

Deno.test("TokenBuckets allows a burst, then one per refill interval, and says how long to wait", () => {
  const b = new TokenBuckets({ burst: 2, refillMs: 100, maxKeys: 10 });
  assert.equal(b.take("a", 0), 0);
  assert.equal(b.take("a", 0), 0);
  assert.equal(b.take("a", 0), 100);
  assert.equal(b.take("a", 40), 60, "a refused take costs nothing");
  assert.equal(b.take("a", 100), 0);
  assert.equal(b.take("b", 100), 0, "each key has its own bucket");
});

Deno.test("TokenBuckets keeps at most maxKeys keys; one that falls out starts full again", () => {
  const b = new TokenBuckets({ burst: 1, refillMs: 1000, maxKeys: 2 });
  assert.equal(b.take("a", 0), 0);
  assert.equal(b.take("b", 0), 0);
  assert.equal(b.take("c", 0), 0);
  assert.equal(b.take("b", 0), 1000, "b was used more recently than a: still empty");
  assert.equal(b.take("a", 0), 0, "a fell out and starts full");
});
