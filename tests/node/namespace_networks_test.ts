import assert from "node:assert/strict";
import { assignNetwork, MAX_NETWORK_ID } from "./namespace_networks.ts";
import { NETWORKS } from "./network.ts";

Deno.test("assignNetwork() returns a fixed network by its name, never a new one", () => {
  assert.deepEqual(assignNetwork(NETWORKS, {}, "green"), { network: NETWORKS[1], isNew: false });
});

Deno.test("assignNetwork() gives a new namespace the lowest id no network holds", () => {
  assert.deepEqual(assignNetwork(NETWORKS, { "team-a": 4, "team-c": 6 }, "team-b"), {
    network: { name: "team-b", id: 5, bridge: "lnet5" },
    isNew: true,
  });
});

Deno.test("assignNetwork() returns a namespace's network made before, with its id", () => {
  assert.deepEqual(assignNetwork(NETWORKS, { "team-a": 4 }, "team-a"), {
    network: { name: "team-a", id: 4, bridge: "lnet4" },
    isNew: false,
  });
});

Deno.test("assignNetwork() refuses a name that is no namespace's", () => {
  for (const name of ["", "Team", "a/b", "-a", "x".repeat(64), "../red"]) {
    assert.throws(() => assignNetwork(NETWORKS, {}, name), RangeError, name);
  }
});

Deno.test("assignNetwork() refuses a new network when every id is taken", () => {
  const assigned: Record<string, number> = {};
  for (let id = 4; id <= MAX_NETWORK_ID; id++) assigned[`ns-${id}`] = id;
  assert.throws(() => assignNetwork(NETWORKS, assigned, "one-more"), /Every network id/);
  assert.equal(assignNetwork(NETWORKS, assigned, "ns-9").network.id, 9);
});
