/** desiredState() and the node's own addresses: no pod gets a target at one. */
import assert from "node:assert/strict";
import { keyId } from "../probe/key.ts";
import { compute, pod } from "../../tests/helpers/desired_state_world.ts";

for (const addressSharing of ["exclusive", "shared"] as const) {
  Deno.test(`desiredState() under ${addressSharing} gives no pod a target at one of the node's own addresses, withdraws it and reports the pod`, () => {
    const host = new Set(["10.0.0.5", "fd00::5"]);
    const state = compute([pod("a", "10.0.0.5", 1), pod("b", "10.0.0.6", 2)], {
      hostAddresses: host,
      config: { addressSharing },
    });
    assert.deepEqual([...state.desired.values()].map((e) => keyId(e.key)), ["10.0.0.6:8080"]);
    assert.deepEqual(state.withdraw.map(keyId), ["10.0.0.5:8080"]);
    assert.deepEqual(state.hostHeld.map((h) => [h.pod.uid, h.address]), [["a", "10.0.0.5"]]);
    const skip = state.skips.find((s) => s.reason === "host-address");
    assert.equal(skip?.pod.uid, "a");
    assert.match(skip?.message ?? "", /10\.0\.0\.5 is one of this node's own addresses/);
  });
}

Deno.test("desiredState() holds the node's addresses against a pod whose network is unknown or the default too", () => {
  const state = compute([pod("plain", "10.0.0.5", undefined), pod("b", "10.0.0.5", 2)], {
    hostAddresses: new Set(["10.0.0.5"]),
    config: { addressSharing: "shared" },
  });
  assert.equal(state.desired.size, 0);
  assert.deepEqual(state.hostHeld.map((h) => h.pod.uid).sort(), ["b", "plain"]);
});

Deno.test("desiredState() holds no address for the host when it knows none of the node's addresses", () => {
  const state = compute([pod("a", "10.0.0.5", 1)]);
  assert.deepEqual(state.hostHeld, []);
  assert.deepEqual([...state.desired.keys()], ["10.0.0.5:8080"]);
  assert.deepEqual(state.skips, []);
});
