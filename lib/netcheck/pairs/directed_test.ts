import assert from "node:assert/strict";
import { directedPairs, pairCount } from "./directed.ts";

Deno.test("directedPairs() yields every ordered pair of distinct items exactly once", () => {
  for (let n = 0; n <= 13; n++) {
    const items = Array.from({ length: n }, (_, i) => i);
    const seen = new Set<string>();
    for (const { from, to } of directedPairs(items)) {
      assert.notEqual(from, to);
      const key = `${from}>${to}`;
      assert.ok(!seen.has(key), `${key} twice for n=${n}`);
      seen.add(key);
    }
    assert.equal(seen.size, pairCount(n));
  }
});

Deno.test("directedPairs() yields rounds whose pairs share no endpoint", () => {
  const n = 10;
  const pairs = [...directedPairs(Array.from({ length: n }, (_, i) => i))];
  for (let start = 0; start < pairs.length; start += n / 2) {
    const used = new Set<number>();
    for (const p of pairs.slice(start, start + n / 2)) {
      assert.ok(!used.has(p.from) && !used.has(p.to));
      used.add(p.from).add(p.to);
    }
  }
});

Deno.test("directedPairs() is lazy: the first pair of 100000 items comes at once", () => {
  const items = Array.from({ length: 100_000 }, (_, i) => i);
  const started = performance.now();
  const first = directedPairs(items).next();
  assert.equal(first.done, false);
  assert.ok(performance.now() - started < 1000);
});
