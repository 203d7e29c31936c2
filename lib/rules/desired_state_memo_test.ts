/** desiredState()'s memo: the rules run again, and views change, only when a pod or its node network does. */
import assert from "node:assert/strict";
import type { RulesMemo } from "./address_placement.ts";
import { keyId } from "../probe/key.ts";
import { compute, pod } from "../../tests/helpers/desired_state_world.ts";

Deno.test("desiredState() runs the rules again for a pod only when its node network changes", () => {
  const memo: RulesMemo = new WeakMap();
  const a = pod("a", "10.0.0.1", 1);
  compute([a], { memo });
  const first = memo.get(a);
  compute([a], { memo });
  assert.equal(memo.get(a), first, "same pod object, same network: the memo is reused");
  compute([a], { memo, nodeNetworks: new Map([["a", { network: "net2", networkId: 2 }]]) });
  assert.notEqual(memo.get(a), first);
});

Deno.test("desiredState() hands back the same views and entries while a pod does not change", () => {
  const memo: RulesMemo = new WeakMap();
  const a = pod("a", "10.0.0.1", 1, [8080, 9000]);
  const first = compute([a], { memo });
  const again = compute([a], { memo });
  assert.equal(again.views.length, 2);
  again.views.forEach((v, i) => assert.equal(v, first.views[i]));
  assert.equal(again.desired.get(keyId(again.views[0].entry.key)), first.views[0].entry);
  const moved = compute([pod("a", "10.0.0.2", 1, [8080, 9000])], { memo });
  assert.notEqual(moved.views[0], first.views[0], "a changed pod gets new views");
});

Deno.test("desiredState() keeps the views of a pod the node attached while neither changes", () => {
  const memo: RulesMemo = new WeakMap();
  const a = pod("a", "10.0.0.1", 1, [8080, 9000]);
  const nodeNetworks = new Map([["a", { network: "net2", networkId: 2 }]]);
  const first = compute([a], { memo, nodeNetworks });
  const again = compute([a], { memo, nodeNetworks });
  assert.deepEqual(again.views.map((v) => v.entry.value.networkId), [2, 2]);
  again.views.forEach((v, i) => assert.equal(v, first.views[i]));
});
