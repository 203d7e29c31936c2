import assert from "node:assert/strict";
import type { PathResult } from "../checks/path_result.ts";
import { AsymmetryCheck, FailureSample, Smallest, Summary } from "./summary.ts";

const path = (over: Partial<PathResult>): PathResult => ({
  phase: "bandwidth",
  from: "a",
  to: "b",
  fromPod: "pa",
  toPod: "pb",
  ok: true,
  attempts: 1,
  durationMs: 1,
  ...over,
});

Deno.test("Smallest keeps only the k smallest values, sorted", () => {
  const s = new Smallest<number>(3, (x) => x);
  for (const v of [5, 1, 9, 3, 7, 2, 8]) s.add(v);
  assert.deepEqual(s.items, [1, 2, 3]);
});

Deno.test("FailureSample stays bounded and keeps a share for a rare class", () => {
  const f = new FailureSample(10);
  for (let i = 0; i < 1000; i++) f.add(path({ ok: false, errorClass: "TIMEOUT", to: `n${i}` }));
  f.add(path({ ok: false, errorClass: "REFUSED" }));
  assert.equal(f.items.length, 10);
  assert.ok(f.items.some((r) => r.errorClass === "REFUSED"));
  assert.equal(f.byClass.get("TIMEOUT"), 1000);
});

Deno.test("AsymmetryCheck flags directions differing by more than the factor", () => {
  const a = new AsymmetryCheck(2);
  a.record("x", "y", 100);
  a.record("y", "x", 300);
  a.record("x", "z", 100);
  a.record("z", "x", 150);
  assert.equal(a.count, 1);
  assert.deepEqual(a.flagged[0], { a: "x", b: "y", aToB: 100, bToA: 300, factor: 3 });
  assert.equal(a.pending, 0);
});

Deno.test("AsymmetryCheck forgets a pair when one direction has no figure", () => {
  const a = new AsymmetryCheck(2);
  a.record("x", "y", 100);
  a.record("y", "x", undefined);
  assert.equal(a.count, 0);
  assert.equal(a.pending, 0);
});

Deno.test("AsymmetryCheck pairs each figure with its own reverse while a node waits on several", () => {
  const a = new AsymmetryCheck(2);
  // x waits on y, z and w at once; the reverses come in another order.
  a.record("x", "y", 100);
  a.record("x", "z", 100);
  a.record("w", "x", 100);
  assert.equal(a.pending, 3);
  a.record("z", "x", 500);
  a.record("x", "w", 120);
  assert.equal(a.pending, 1);
  a.record("y", "x", 110);
  assert.equal(a.pending, 0);
  assert.deepEqual(a.flagged, [{ a: "x", b: "z", aToB: 100, bToA: 500, factor: 5 }]);
  // The same pair again is a new pair of figures.
  a.record("y", "x", 100);
  a.record("x", "y", 400);
  assert.equal(a.count, 2);
});

Deno.test("Summary totals throughput and counts failures per phase", () => {
  const s = new Summary(2);
  s.add(path({ bitsPerSecond: 100 }));
  s.add(path({ from: "b", to: "a", bitsPerSecond: 300 }));
  s.add(path({ phase: "connect", ok: false, errorClass: "TIMEOUT" }));
  assert.equal(s.totalBps, 400);
  assert.equal(s.meanBps, 200);
  assert.deepEqual(s.connect, { tested: 1, passed: 0, failed: 1 });
  assert.equal(s.failed, true);
  assert.equal(s.asymmetry.count, 1);
});
