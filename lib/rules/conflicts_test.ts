import assert from "node:assert/strict";
import {
  addressClashes,
  CONFLICT_POLICIES,
  conflictMessage,
  type ConflictPolicy,
  refusalMessage,
  resolveConflicts,
} from "./conflicts.ts";
import type { PodPlacement } from "./placement.ts";
import type { Target } from "./targets.ts";

function target(
  uid: string,
  created: string | undefined,
  networkId: number,
  address = "10.0.0.5",
  port = 80,
): Target {
  return {
    key: { family: address.includes(":") ? "ipv6" : "ipv4", address, port },
    networkId,
    network: networkId === 0 ? "" : `net${networkId}`,
    pod: { namespace: "ns", name: `pod-${uid}`, uid, creationTimestamp: created },
    container: "app",
    probe: "readiness",
    handler: "tcpSocket",
  };
}

const OLD = "2026-01-01T00:00:00Z";
const NEW = "2026-01-02T00:00:00Z";

interface Case {
  name: string;
  targets: Target[];
  /** The kept targets as "key uid", per policy. */
  kept: Record<ConflictPolicy, string[]>;
  /** The conflicts as "key kept-uid|- dropped-uids", per policy. */
  conflicts: Record<ConflictPolicy, string[]>;
}

const CASES: Case[] = [
  {
    name: "two pods of different networks on one key",
    targets: [target("b", NEW, 2), target("a", OLD, 1)],
    kept: { "fail-closed": [], "older-wins": ["10.0.0.5:80 a"] },
    conflicts: {
      "fail-closed": ["10.0.0.5:80 - a,b"],
      "older-wins": ["10.0.0.5:80 a b"],
    },
  },
  {
    name: "two pods of one network on one key (a pod recreated with its IP)",
    targets: [target("b", NEW, 1), target("a", OLD, 1)],
    kept: { "fail-closed": ["10.0.0.5:80 a"], "older-wins": ["10.0.0.5:80 a"] },
    conflicts: { "fail-closed": [], "older-wins": [] },
  },
  {
    name: "different ports of one address",
    targets: [target("a", OLD, 1, "10.0.0.5", 80), target("b", NEW, 2, "10.0.0.5", 81)],
    kept: {
      "fail-closed": ["10.0.0.5:80 a", "10.0.0.5:81 b"],
      "older-wins": ["10.0.0.5:80 a", "10.0.0.5:81 b"],
    },
    conflicts: { "fail-closed": [], "older-wins": [] },
  },
  {
    name: "a default-network pod and a Lace pod on one key",
    targets: [target("d", OLD, 0), target("l", NEW, 3)],
    kept: { "fail-closed": [], "older-wins": ["10.0.0.5:80 d"] },
    conflicts: {
      "fail-closed": ["10.0.0.5:80 - d,l"],
      "older-wins": ["10.0.0.5:80 d l"],
    },
  },
  {
    name: "three pods, two of them in one network",
    targets: [target("a", OLD, 1), target("b", NEW, 1), target("c", NEW, 2)],
    kept: { "fail-closed": [], "older-wins": ["10.0.0.5:80 a"] },
    conflicts: {
      "fail-closed": ["10.0.0.5:80 - a,b,c"],
      "older-wins": ["10.0.0.5:80 a c"],
    },
  },
  {
    name: "a creation time tie broken by uid",
    targets: [target("z", OLD, 1), target("m", OLD, 2)],
    kept: { "fail-closed": [], "older-wins": ["10.0.0.5:80 m"] },
    conflicts: { "fail-closed": ["10.0.0.5:80 - m,z"], "older-wins": ["10.0.0.5:80 m z"] },
  },
  {
    name: "creation times compared as instants, not strings",
    targets: [
      target("a", "2026-01-01T00:00:00.500Z", 1),
      target("b", "2026-01-01T01:00:00+02:00", 2), // 23:00 the day before
    ],
    kept: { "fail-closed": [], "older-wins": ["10.0.0.5:80 b"] },
    conflicts: { "fail-closed": ["10.0.0.5:80 - b,a"], "older-wins": ["10.0.0.5:80 b a"] },
  },
  {
    name: "a pod without creation time ranks after one with it",
    targets: [target("a", undefined, 1), target("b", NEW, 2)],
    kept: { "fail-closed": [], "older-wins": ["10.0.0.5:80 b"] },
    conflicts: { "fail-closed": ["10.0.0.5:80 - b,a"], "older-wins": ["10.0.0.5:80 b a"] },
  },
  {
    name: "one pod's two probes on one key count once",
    targets: [
      target("a", OLD, 1),
      { ...target("a", OLD, 1), probe: "liveness" },
      target("b", NEW, 2),
    ],
    kept: { "fail-closed": [], "older-wins": ["10.0.0.5:80 a"] },
    conflicts: { "fail-closed": ["10.0.0.5:80 - a,b"], "older-wins": ["10.0.0.5:80 a b"] },
  },
];

function show(result: ReturnType<typeof resolveConflicts>) {
  const key = (k: Target["key"]) => `${k.address}:${k.port}`;
  return {
    kept: result.targets.map((t) => `${key(t.key)} ${t.pod.uid}`),
    conflicts: result.conflicts.map((c) =>
      `${key(c.key)} ${c.kept?.pod.uid ?? "-"} ${c.dropped.map((d) => d.pod.uid).join(",")}`
    ),
  };
}

for (const c of CASES) {
  for (const policy of CONFLICT_POLICIES) {
    Deno.test(`resolveConflicts() ${policy}: ${c.name}`, () => {
      const { kept, conflicts } = show(resolveConflicts(c.targets, policy));
      assert.deepEqual(kept, c.kept[policy]);
      assert.deepEqual(conflicts, c.conflicts[policy]);
    });
  }
}

Deno.test("resolveConflicts() names the policy and, under older-wins only, the kept claim", () => {
  const targets = [target("b", NEW, 2), target("a", OLD, 1)];
  const [closed] = resolveConflicts(targets, "fail-closed").conflicts;
  assert.equal(closed.policy, "fail-closed");
  assert.equal(closed.kept, undefined);
  assert.deepEqual(closed.dropped.map((d) => [d.network, d.networkId]), [["net1", 1], [
    "net2",
    2,
  ]]);
  const [older] = resolveConflicts(targets, "older-wins").conflicts;
  assert.equal(older.policy, "older-wins");
  assert.deepEqual(older.kept, { pod: targets[1].pod, network: "net1", networkId: 1 });
});

// A small deterministic shuffle, so a failure can be replayed.
function shuffled<T>(xs: T[], seed: number): T[] {
  const out = [...xs];
  for (let i = out.length - 1; i > 0; i--) {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    const j = seed % (i + 1);
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

for (const policy of CONFLICT_POLICIES) {
  Deno.test(`resolveConflicts() ${policy} gives the same result for every input order`, () => {
    const all = [
      target("a", NEW, 1),
      target("b", OLD, 2),
      target("c", OLD, 3),
      target("d", undefined, 1),
      target("e", NEW, 4, "fd00::1"),
      target("f", OLD, 4, "10.0.0.6", 8080),
      target("g", OLD, 0, "10.0.0.6", 8080),
      target("h", NEW, 5, "10.0.0.7", 8080),
    ];
    const expected = JSON.stringify(resolveConflicts(all, policy));
    for (let seed = 1; seed <= 300; seed++) {
      assert.equal(JSON.stringify(resolveConflicts(shuffled(all, seed), policy)), expected);
    }
  });
}

function placement(uid: string, networkId: number | undefined, ...addresses: string[]) {
  return {
    pod: { namespace: "ns", name: `pod-${uid}`, uid },
    network: networkId === undefined ? undefined : { network: `net${networkId}`, networkId },
    addresses: addresses.map((address) => ({ family: "ipv4" as const, address, port: 0 })),
  } satisfies PodPlacement;
}

Deno.test("addressClashes() finds an address a pod of another network holds", () => {
  const clashes = addressClashes(
    { uid: "new", networkId: 1, addresses: ["10.0.0.5", "10.0.0.9"] },
    [placement("old", 2, "10.0.0.5"), placement("far", 3, "10.0.0.6")],
  );
  assert.deepEqual(clashes.map((c) => [c.address, c.holder.uid, c.holderNetwork.networkId]), [
    ["10.0.0.5", "old", 2],
  ]);
});

Deno.test("addressClashes() counts the default network as another network", () => {
  const clashes = addressClashes(
    { uid: "new", networkId: 1, addresses: ["10.0.0.5"] },
    [placement("plain", 0, "10.0.0.5")],
  );
  assert.equal(clashes.length, 1);
});

Deno.test("addressClashes() ignores the same network, the same pod and unknown networks", () => {
  const clashes = addressClashes(
    { uid: "new", networkId: 1, addresses: ["10.0.0.5"] },
    [
      placement("same-net", 1, "10.0.0.5"),
      placement("new", 2, "10.0.0.5"),
      placement("unknown", undefined, "10.0.0.5"),
    ],
  );
  assert.deepEqual(clashes, []);
});

Deno.test("conflictMessage() names the address and port, never the other tenant", () => {
  for (const policy of CONFLICT_POLICIES) {
    const [c] = resolveConflicts([target("mine", NEW, 2), target("theirs", OLD, 1)], policy)
      .conflicts;
    const mine = c.dropped.find((d) => d.pod.uid === "mine")!;
    const message = conflictMessage(c, { ...mine, pod: { ...mine.pod, namespace: "tenant-b" } });
    assert.match(message, /10\.0\.0\.5:80/);
    assert.match(message, /network "net2"/);
    assert.doesNotMatch(message, /theirs|net1|ns\//);
  }
});

Deno.test("conflictMessage() quotes a network name holding a quote so it says nothing else", () => {
  const [c] = resolveConflicts([target("mine", NEW, 2), target("theirs", OLD, 1)], "fail-closed")
    .conflicts;
  const mine = c.dropped.find((d) => d.pod.uid === "mine")!;
  const hostile = 'net2"-and-the-default-network"';
  const message = conflictMessage(c, { ...mine, network: hostile });
  const quoted = /not tagged into network ("(?:[^"\\]|\\.)*") until/.exec(message);
  assert.ok(quoted, message);
  assert.equal(JSON.parse(quoted[1]), hostile);
});

Deno.test("conflictMessage() says fail closed and older-wins apart", () => {
  const targets = [target("a", NEW, 2), target("b", OLD, 1)];
  const [closed] = resolveConflicts(targets, "fail-closed").conflicts;
  assert.match(conflictMessage(closed, closed.dropped[0]), /for neither pod \(fail closed\)/);
  const [older] = resolveConflicts(targets, "older-wins").conflicts;
  assert.match(conflictMessage(older, older.dropped[0]), /older and keeps it/);
});

Deno.test("refusalMessage() names the address and no other pod", () => {
  const clashes = addressClashes({ uid: "new", networkId: 1, addresses: ["10.0.0.5"] }, [
    placement("holder", 2, "10.0.0.5"),
  ]);
  const message = refusalMessage(clashes);
  assert.match(message, /address 10\.0\.0\.5 is already used/);
  assert.doesNotMatch(message, /holder|net2/);
  // To a pod whose own network was unknown at its ADD, the holder may be of its own network.
  const unknown = refusalMessage(clashes, true);
  assert.match(unknown, /by another pod, and this pod's network was unknown at its ADD/);
  assert.doesNotMatch(unknown, /holder|net2/);
});

Deno.test("the conflict policies are fail-closed and older-wins", () => {
  assert.deepEqual([...CONFLICT_POLICIES], ["fail-closed", "older-wins"]);
});

Deno.test("addressClashes() sorts by address, then by holder", () => {
  const clashes = addressClashes(
    { uid: "new", networkId: 1, addresses: ["10.0.0.5", "10.0.0.6"] },
    [placement("z", 2, "10.0.0.6"), placement("y", 3, "10.0.0.5"), placement("x", 2, "10.0.0.5")],
  );
  assert.deepEqual(clashes.map((c) => `${c.address} ${c.holder.uid}`), [
    "10.0.0.5 x",
    "10.0.0.5 y",
    "10.0.0.6 z",
  ]);
});

Deno.test("conflictMessage() brackets an IPv6 address and names the default network", () => {
  const [c] = resolveConflicts(
    [target("a", NEW, 0, "fd00::1"), target("b", OLD, 1, "fd00::1")],
    "fail-closed",
  )
    .conflicts;
  const plain = c.dropped.find((d) => d.networkId === 0)!;
  assert.equal(
    conflictMessage(c, plain),
    "Probe target [fd00::1]:80 is also claimed on this node by a pod of another network: Lace tags it for neither pod (fail closed), so the kubelet's probes of this pod to [fd00::1]:80 are not tagged into the default network until the address is unique on the node",
  );
});

Deno.test("refusalMessage() lists each clashing address once", () => {
  const clashes = addressClashes(
    { uid: "new", networkId: 1, addresses: ["10.0.0.5", "10.0.0.6"] },
    [
      placement("h1", 2, "10.0.0.5"),
      placement("h2", 3, "10.0.0.5", "10.0.0.6"),
    ],
  );
  assert.match(refusalMessage(clashes), /address 10\.0\.0\.5, 10\.0\.0\.6 is already used/);
});
