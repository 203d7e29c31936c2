import assert from "node:assert/strict";
import { addressPlacement, type AddressPlacementInput } from "./address_placement.ts";
import { DEFAULT_NETWORK, UNKNOWN_NETWORK } from "./pod_network.ts";
import type { Pod } from "../pods/pod.ts";
import { pod, podLookups } from "../../tests/helpers/core_world.ts";

const OPTS = { networkAnnotation: "lace.io/network", networkIdAnnotation: "lace.io/network-id" };

/** addressPlacement() of pod `p` alone, with the CNI path's lookups in `input`. */
function place(p: Pod, input: Partial<AddressPlacementInput> = {}) {
  return addressPlacement({
    pods: podLookups(new Map([[p.metadata.uid, p]])),
    memo: new WeakMap(),
    config: OPTS,
    node: undefined,
    ...input,
  }, p.metadata.uid);
}

const ID = { namespace: "ns", name: "p-a", uid: "a", creationTimestamp: "2026-01-01T00:00:00Z" };
const v4 = (address: string) => ({ family: "ipv4", address, port: 0 });

Deno.test("addressPlacement() places a pod in its annotations' network at its addresses, its probes known", () => {
  assert.deepEqual(place(pod("a", "10.0.0.7", 1)), {
    pod: ID,
    network: { network: "net1", networkId: 1 },
    addresses: [v4("10.0.0.7")],
  });
});

Deno.test("addressPlacement() holds a pod the CNI path reported without a network against every network, its probes unknown", () => {
  const plain = pod("a", "10.0.0.7", undefined);
  assert.deepEqual(place(plain)?.network, DEFAULT_NETWORK, "with nothing else said: the default");
  assert.deepEqual(place(plain, { networkUnknown: (uid) => uid === "a" }), {
    pod: ID,
    network: UNKNOWN_NETWORK,
    addresses: [v4("10.0.0.7")],
    probesUnknown: true,
  });
});

Deno.test("addressPlacement() places no finished pod, even one whose ADD learnt a network or whose network is unknown", () => {
  const done = pod("a", "10.0.0.7", 1);
  done.status!.phase = "Succeeded";
  assert.equal(place(done), undefined);
  assert.equal(
    place(done, { learntNetwork: () => ({ network: "net2", networkId: 2 }) }),
    undefined,
  );
  assert.equal(place(done, { networkUnknown: () => true }), undefined);
});

Deno.test("addressPlacement() holds the address a pod's sandbox was attached with before its views name any", () => {
  // The kubelet probes the pod there already; free, the address would take another network's ADD.
  const placed = place(pod("a", undefined, 1), { attachedAddresses: () => ["10.0.0.7"] });
  assert.deepEqual(placed?.addresses, [v4("10.0.0.7")]);
});

Deno.test("addressPlacement() holds every address of a dual-stack sandbox, each once, where the views name only one", () => {
  const placed = place(pod("a", "10.0.0.7", 1), {
    attachedAddresses: () => ["10.0.0.7", "fd00::7"],
  });
  assert.deepEqual(placed?.addresses, [
    v4("10.0.0.7"),
    { family: "ipv6", address: "fd00::7", port: 0 },
  ]);
});
