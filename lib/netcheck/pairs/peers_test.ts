import assert from "node:assert/strict";
import { connectivityPeers, roundsToCover, sampledPairCount, sampledPairs } from "./peers.ts";
import { pairCount } from "./directed.ts";

/** A small deterministic generator, so a failing case can be reproduced from its seed. */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32;
}

Deno.test("sampledPairs(): every directed pair exactly once within ⌈(N−1)/k⌉ rounds, for random N and k", () => {
  const rand = random(27);
  for (let trial = 0; trial < 300; trial++) {
    const n = 2 + Math.floor(rand() * 60);
    const k = 1 + Math.floor(rand() * (n + 3));
    const items = Array.from({ length: n }, (_, i) => i);
    const rounds = roundsToCover(n, k);
    assert.equal(rounds, Math.ceil((n - 1) / Math.min(k, n - 1)), `n=${n} k=${k}`);
    const seen = new Set<number>();
    const start = Math.floor(rand() * 1000); // any starting round: the rotation repeats
    for (let r = start; r < start + rounds; r++) {
      const out = new Map<number, number>(), into = new Map<number, number>();
      let count = 0;
      for (const { from, to } of sampledPairs(items, k, r)) {
        assert.notEqual(from, to);
        const key = from * n + to;
        assert.ok(!seen.has(key), `n=${n} k=${k}: ${from}→${to} twice`);
        seen.add(key);
        out.set(from, (out.get(from) ?? 0) + 1);
        into.set(to, (into.get(to) ?? 0) + 1);
        count++;
      }
      assert.equal(count, sampledPairCount(n, k, r), `n=${n} k=${k} r=${r}`);
      // Each node tests at most k peers (k+1 for some when N is odd), each both ways.
      const most = n % 2 === 0 ? Math.min(k, n - 1) : Math.min(k, n - 1) + 1;
      for (const [node, c] of out) {
        assert.ok(c <= most, `n=${n} k=${k}: node ${node} has ${c} peers`);
        assert.equal(into.get(node), c, "A→B and B→A in the same round");
      }
    }
    assert.equal(seen.size, pairCount(n), `n=${n} k=${k}: not every pair covered`);
  }
});

Deno.test("sampledPairs() with k ≥ N−1 is every pair in one round", () => {
  assert.equal(roundsToCover(10, 9), 1);
  assert.equal([...sampledPairs([...Array(10).keys()], 50, 7)].length, 90);
});

Deno.test("connectivityPeers(): all pairs while they fit the budget, else as many as fit, at least k", () => {
  assert.equal(connectivityPeers(1000, 50_000, 60_000, 8), 0);
  assert.equal(connectivityPeers(1000, 120_000, 60_000, 8), 499);
  assert.equal(connectivityPeers(1000, 10_000_000, 60_000, 8), 8);
});
