import assert from "node:assert/strict";
import { OPTS, pod } from "./_pod_fixture.ts";
import { podPlacement } from "./placement.ts";

const NODE_NET = { network: "green", networkId: 1 };

Deno.test("podPlacement() says where a live pod sits: its network and its own addresses", () => {
  assert.deepEqual(podPlacement(pod({ ips: ["10.1.0.5", "169.254.1.1"] }), OPTS), {
    pod: { namespace: "shop", name: "web", uid: "u1", creationTimestamp: "2026-01-01T00:00:00Z" },
    network: { network: "blue", networkId: 7 },
    addresses: [{ family: "ipv4", address: "10.1.0.5", port: 0 }],
  });
  assert.deepEqual(podPlacement(pod({}), OPTS, NODE_NET)?.network, NODE_NET);
  assert.deepEqual(podPlacement(pod({ annotations: null }), OPTS)?.network, {
    network: "",
    networkId: 0,
  });
  const malformed = pod({ annotations: { "lace.io/network": "x", "lace.io/network-id": "0" } });
  assert.equal(podPlacement(malformed, OPTS)?.network, undefined);
});

Deno.test("podPlacement() leaves out host-network and finished pods", () => {
  assert.equal(podPlacement(pod({ hostNetwork: true }), OPTS), undefined);
  assert.equal(podPlacement(pod({ phase: "Succeeded" }), OPTS), undefined);
  assert.equal(podPlacement(pod({ phase: "Failed" }), OPTS), undefined);
});
