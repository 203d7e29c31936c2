/** desiredState() under the per-pod cap and a full map: which targets are written, which reported. */
import assert from "node:assert/strict";
import { keyId } from "../probe/key.ts";
import { compute, pod } from "../../tests/helpers/desired_state_world.ts";

Deno.test("desiredState() writes a pod's first targets up to the cap and reports the rest", () => {
  const state = compute([pod("big", "10.0.0.1", 1, [9003, 9001, 9002])], {
    config: { maxTargetsPerPod: 2 },
  });
  assert.deepEqual([...state.desired.keys()].sort(), ["10.0.0.1:9001", "10.0.0.1:9003"]);
  assert.deepEqual(state.unwritten.map((u) => [u.reason, u.count, u.wanted]), [["cap", 1, 3]]);
  // Each view is its own target's: the container that probes that port, the entry written for it.
  assert.deepEqual(state.views.map((v) => [v.container, v.entry.key.port]).sort(), [
    ["c0", 9003],
    ["c1", 9001],
  ]);
  for (const v of state.views) assert.equal(state.desired.get(keyId(v.entry.key)), v.entry);
});

Deno.test("desiredState() trims the pod that floods a full map and keeps the others", () => {
  const flood = Array.from({ length: 30 }, (_, i) => 20000 + i);
  const state = compute(
    [pod("flood", "10.0.0.9", 3, flood), pod("a", "10.0.0.1", 1, [80, 81])],
    { capacity: 10 },
  );
  assert.equal(state.desired.size, 10);
  assert.ok(state.desired.has("10.0.0.1:80") && state.desired.has("10.0.0.1:81"));
  assert.deepEqual(state.unwritten.map((u) => [u.pod.uid, u.reason, u.count]), [
    ["flood", "map-full", 22],
  ]);
});

Deno.test("desiredState() keeps a trimmed pod's first targets in its spec order, not in key order", () => {
  const flood = Array.from({ length: 30 }, (_, i) => 20029 - i);
  const state = compute(
    [pod("flood", "10.0.0.9", 3, flood), pod("a", "10.0.0.1", 1, [80, 81])],
    { capacity: 10 },
  );
  assert.deepEqual(
    [...state.desired.keys()].filter((k) => k.startsWith("10.0.0.9:")).sort(),
    flood.slice(0, 8).map((port) => `10.0.0.9:${port}`).sort(),
  );
  assert.deepEqual(state.unwritten.map((u) => [u.pod.uid, u.count]), [["flood", 22]]);
});
