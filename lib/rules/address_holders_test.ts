import assert from "node:assert/strict";
import type { PodPlacement } from "./placement.ts";
import type { PodNetwork } from "./pod_network.ts";
import {
  addressClashMessage,
  podAddressKey,
  sharedAddresses,
  untaggedAt,
} from "./address_holders.ts";

const GREEN: PodNetwork = { network: "green", networkId: 1 };
const RED: PodNetwork = { network: "red", networkId: 2 };
const BLUE: PodNetwork = { network: "blue", networkId: 3 };
const DEFAULT: PodNetwork = { network: "", networkId: 0 };

function at(
  name: string,
  network: PodNetwork | undefined,
  created: string | undefined,
  ...addresses: string[]
): PodPlacement {
  return {
    pod: {
      namespace: `ns-${name}`,
      name,
      uid: `uid-${name}`,
      ...(created ? { creationTimestamp: created } : {}),
    },
    network,
    addresses: addresses.map((a) => ({
      family: a.includes(":") ? "ipv6" : "ipv4",
      address: a,
      port: 0,
    })),
  };
}

function permutations<T>(items: T[]): T[][] {
  if (items.length <= 1) return [items];
  return items.flatMap((x, i) =>
    permutations([...items.slice(0, i), ...items.slice(i + 1)]).map((rest) => [x, ...rest])
  );
}

function untagged(placements: PodPlacement[]): string[] {
  return [...untaggedAt(sharedAddresses(placements))].sort();
}

Deno.test("sharedAddresses() makes the older pod the holder and the later pods of other networks lose that address only", () => {
  const v = at("v", GREEN, "2026-01-01T00:00:00Z", "10.0.0.10", "fd00::10");
  const a = at("a", RED, "2026-01-02T00:00:00Z", "10.0.0.10", "10.0.0.99");
  const [shared] = sharedAddresses([a, v]);
  assert.equal(sharedAddresses([a, v]).length, 1, "fd00::10 and 10.0.0.99 are held by one network");
  assert.equal(shared.address, "10.0.0.10");
  assert.equal(shared.holder.pod.name, "v");
  assert.deepEqual(shared.later.map((p) => p.pod.name), ["a"]);
  assert.equal(shared.holderWithdrawn, false);
  // The holder keeps its own; the later pod keeps its other address.
  assert.deepEqual(untagged([a, v]), [podAddressKey("uid-a", "10.0.0.10")]);
});

Deno.test("sharedAddresses() gives the same holder whatever order the pods arrive in", () => {
  const pods = [
    at("v", GREEN, "2026-01-01T00:00:00Z", "10.0.0.10"),
    at("a", RED, "2026-01-02T00:00:00Z", "10.0.0.10"),
    at("b", BLUE, "2026-01-02T00:00:00Z", "10.0.0.10"),
    at("v2", GREEN, "2026-01-03T00:00:00Z", "10.0.0.10"),
    at("undated", RED, undefined, "10.0.0.10"),
  ];
  const expected = JSON.stringify(sharedAddresses(pods));
  for (const order of permutations(pods)) {
    assert.equal(JSON.stringify(sharedAddresses(order)), expected);
  }
  const [s] = sharedAddresses(pods);
  assert.equal(s.holder.pod.name, "v");
  assert.deepEqual(s.peers.map((p) => p.pod.name), ["v2"], "a pod of the holder's network keeps");
  // Same creation time: uid decides; no creation time: never older than anyone.
  assert.deepEqual(s.later.map((p) => p.pod.name), ["a", "b", "undated"]);
  assert.deepEqual(untagged(pods), ["uid-a|10.0.0.10", "uid-b|10.0.0.10", "uid-undated|10.0.0.10"]);
});

Deno.test("sharedAddresses() counts the default network as a network", () => {
  // An older default-network pod holds the address: the later Lace pod gets nothing there.
  const host = at("host", DEFAULT, "2026-01-01T00:00:00Z", "10.0.0.10");
  const lace = at("lace", GREEN, "2026-01-02T00:00:00Z", "10.0.0.10");
  assert.deepEqual(untagged([lace, host]), ["uid-lace|10.0.0.10"]);
  assert.equal(sharedAddresses([lace, host])[0].holder.pod.name, "host");
  // A later default-network pod is reached by the kubelet without a mark and could redirect it to
  // the holder's ports: the holder and its peers lose the address too.
  const old = at("old", GREEN, "2026-01-01T00:00:00Z", "10.0.0.10");
  const peer = at("peer", GREEN, "2026-01-01T00:00:01Z", "10.0.0.10");
  const late = at("late", DEFAULT, "2026-01-02T00:00:00Z", "10.0.0.10");
  const [s] = sharedAddresses([late, peer, old]);
  assert.equal(s.holderWithdrawn, true);
  assert.deepEqual(untagged([late, peer, old]), [
    "uid-late|10.0.0.10",
    "uid-old|10.0.0.10",
    "uid-peer|10.0.0.10",
  ]);
});

Deno.test("sharedAddresses() gives an agent that restarts, learning the pods in another order, the same holder", () => {
  // The first agent learnt the holder first; the restarted one lists the later pod first and the
  // holder only in a second batch. Whatever it saw in between, the end state is the same.
  const v = at("v", GREEN, "2026-01-01T00:00:00Z", "10.0.0.10");
  const a = at("a", RED, "2026-01-02T00:00:00Z", "10.0.0.10");
  const before = untagged([v, a]);
  assert.deepEqual(untagged([a]), [], "alone, the later pod holds the address");
  assert.deepEqual(untagged([a, v]), before);
  assert.deepEqual(before, ["uid-a|10.0.0.10"]);
});

Deno.test("sharedAddresses() leaves out pods of one network and pods whose network is unknown", () => {
  const one = at("one", GREEN, "2026-01-01T00:00:00Z", "10.0.0.10");
  const two = at("two", GREEN, "2026-01-02T00:00:00Z", "10.0.0.10");
  const unknown = at("unknown", undefined, "2026-01-01T00:00:00Z", "10.0.0.10");
  assert.deepEqual(sharedAddresses([one, two, unknown]), []);
});

Deno.test("addressClashMessage() names the address and the pod's own network, never another tenant", () => {
  const v = at("victim", GREEN, "2026-01-01T00:00:00Z", "10.0.0.10");
  const a = at("attacker", RED, "2026-01-02T00:00:00Z", "10.0.0.10");
  const late = at("hostpod", DEFAULT, "2026-01-03T00:00:00Z", "10.0.0.10");
  const [s] = sharedAddresses([v, a, late]);
  for (
    const [who, own] of [[s.later[0], 'network "red"'], [s.holder, 'network "green"']] as const
  ) {
    const msg = addressClashMessage(s, who);
    assert.match(msg, /10\.0\.0\.10/);
    assert.ok(msg.includes(own), msg);
    for (const p of [v, a, late]) {
      if (p.pod.uid === who.pod.uid) continue;
      assert.ok(!msg.includes(p.pod.name) && !msg.includes(p.pod.namespace), msg);
      if (p.network) assert.ok(!msg.includes(`"${p.network.network}"`), msg);
    }
  }
});
