/**
 * desiredState() over the node's pods: each entry's network and mark, conflicts of one key,
 * and the pods it skips with their reasons.
 */
import assert from "node:assert/strict";
import { markFor } from "../probe/key.ts";
import { PodRefusedError } from "../pods/pod.ts";
import { keyId } from "../probe/key.ts";
import { compute, CONFIG, pod } from "../../tests/helpers/desired_state_world.ts";

Deno.test("desiredState() gives each entry the mark of its pod's network", () => {
  const state = compute([pod("a", "10.0.0.1", 1), pod("b", "10.0.0.2", 2)]);
  assert.deepEqual(
    [...state.desired.values()].map((e) => [keyId(e.key), e.value.networkId, e.value.mark]),
    [["10.0.0.1:8080", 1, markFor(CONFIG, 1)], ["10.0.0.2:8080", 2, markFor(CONFIG, 2)]],
  );
  assert.deepEqual(state.views.map((v) => v.pod.uid), ["a", "b"]);
});

Deno.test("desiredState() puts a pod in the network the node attached it to, not its annotation's", () => {
  const state = compute([pod("a", "10.0.0.1", 1)], {
    nodeNetworks: new Map([["a", { network: "net2", networkId: 2 }]]),
  });
  assert.deepEqual([...state.desired.values()].map((e) => e.value.networkId), [2]);
  assert.deepEqual(state.mismatches.map((m) => m.pod.uid), ["a"]);
});

Deno.test("desiredState() withdraws a key two networks claim under fail-closed", () => {
  const state = compute([pod("a", "10.0.0.5", 1), pod("b", "10.0.0.5", 2)]);
  assert.equal(state.desired.size, 0);
  assert.equal(state.conflicts.length, 1);
  assert.deepEqual(state.withdraw.map(keyId), ["10.0.0.5:8080"]);
});

Deno.test("desiredState() counts a default-network pod's probe as a claim but writes no entry for it", () => {
  const state = compute([pod("plain", "10.0.0.5", undefined), pod("lace", "10.0.0.5", 2)]);
  assert.equal(state.desired.size, 0);
  assert.deepEqual(state.conflicts[0].dropped.map((c) => c.pod.uid).sort(), ["lace", "plain"]);
});

Deno.test("desiredState() skips a pod that cannot be evaluated and keeps the others' entries", () => {
  const state = compute([["bad", new Error("views disagree")], pod("a", "10.0.0.1", 1)]);
  assert.deepEqual([...state.desired.keys()], ["10.0.0.1:8080"]);
  assert.equal(state.skips.length, 1);
  assert.equal(state.skips[0].reason, "malformed");
  assert.deepEqual(state.skips[0].pod, { namespace: "ns", name: "p-bad", uid: "bad" });
  assert.match(state.skips[0].message, /could not be evaluated.*views disagree/);
});

Deno.test("desiredState() reports a pod refused for its size as too-large", () => {
  const refused = new PodRefusedError("too-large", "over the cap of 16384");
  const state = compute([["huge", refused], pod("a", "10.0.0.1", 1)]);
  assert.deepEqual([...state.desired.keys()], ["10.0.0.1:8080"]);
  assert.deepEqual(state.skips.map((s) => s.reason), ["too-large"]);
  assert.match(state.skips[0].message, /over the cap of 16384/);
});

Deno.test("desiredState() skips a pod whose network name is refused and keeps every other pod's targets", () => {
  const bad = pod("b", "10.0.0.2", 2);
  bad.metadata.annotations!["lace.io/network"] = "net2\r\n05:00:00.000 INF forged";
  const state = compute([pod("a", "10.0.0.1", 1), bad, pod("c", "10.0.0.3", 3)]);
  assert.deepEqual([...state.desired.values()].map((e) => keyId(e.key)), [
    "10.0.0.1:8080",
    "10.0.0.3:8080",
  ]);
  assert.deepEqual(
    state.skips.map((s) => [s.pod.uid, s.reason]),
    [["b", "annotation"]],
  );
});

Deno.test("desiredState() names a pod it cannot evaluate by its uid alone when the cache knows nothing else of it", () => {
  const state = compute([["gone", new Error("no view left")], pod("a", "10.0.0.1", 1)], {
    identity: (uid) => uid === "gone" ? undefined : { namespace: "ns", name: `p-${uid}`, uid },
  });
  assert.deepEqual(state.skips.map((s) => s.pod), [{ namespace: "", name: "", uid: "gone" }]);
  assert.deepEqual([...state.desired.keys()], ["10.0.0.1:8080"]);
});

for (const addressSharing of ["exclusive", "shared"] as const) {
  Deno.test(`desiredState() under older-wins and ${addressSharing} writes the older pod's entry for a key two networks claim, and withdraws nothing`, () => {
    const older = pod("a", "10.0.0.5", 1, [8080], "2026-01-01T00:00:00Z");
    const newer = pod("b", "10.0.0.5", 2, [8080], "2026-01-02T00:00:00Z");
    const state = compute([newer, older], {
      config: { addressConflict: "older-wins", addressSharing },
    });
    assert.deepEqual(
      [...state.desired.values()].map((e) => [keyId(e.key), e.value.networkId]),
      [["10.0.0.5:8080", 1]],
    );
    assert.deepEqual(
      state.conflicts.map((c) => [c.kept?.pod.uid, c.dropped.map((d) => d.pod.uid)]),
      [["a", ["b"]]],
    );
    assert.deepEqual(state.withdraw, [], "the kept entry must not leave the map");
  });
}
