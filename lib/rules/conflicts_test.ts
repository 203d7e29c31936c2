import assert from "node:assert/strict";
import { resolveConflicts } from "./conflicts.ts";
import { keyId } from "../datapath/probe_map.ts";
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
    network: `net${networkId}`,
    pod: { namespace: "ns", name: `pod-${uid}`, uid, creationTimestamp: created },
    container: "app",
    probe: "readiness",
    handler: "tcpSocket",
  };
}

const OLD = "2026-01-01T00:00:00Z";
const NEW = "2026-01-02T00:00:00Z";

Deno.test("resolveConflicts() keeps the older pod's target when networks differ", () => {
  const { targets, conflicts } = resolveConflicts([target("b", NEW, 2), target("a", OLD, 1)]);
  assert.deepEqual(targets.map((t) => t.pod.uid), ["a"]);
  assert.equal(conflicts.length, 1);
  assert.equal(conflicts[0].kept.pod.uid, "a");
  assert.equal(conflicts[0].dropped.pod.uid, "b");
  assert.equal(conflicts[0].dropped.networkId, 2);
});

Deno.test("resolveConflicts() breaks a creation time tie by uid", () => {
  const { targets } = resolveConflicts([target("z", OLD, 1), target("m", OLD, 2)]);
  assert.equal(targets[0].pod.uid, "m");
});

Deno.test("resolveConflicts() compares creation times as instants, not strings", () => {
  const { targets } = resolveConflicts([
    target("a", "2026-01-01T00:00:00.500Z", 1),
    target("b", "2026-01-01T01:00:00+02:00", 2), // 23:00 the day before
  ]);
  assert.equal(targets[0].pod.uid, "b");
});

Deno.test("resolveConflicts() ranks a pod without creation time after one with it", () => {
  const { targets } = resolveConflicts([target("a", undefined, 1), target("b", NEW, 2)]);
  assert.equal(targets[0].pod.uid, "b");
});

Deno.test("resolveConflicts() picks one silently when two pods share key and network", () => {
  const { targets, conflicts } = resolveConflicts([target("b", NEW, 1), target("a", OLD, 1)]);
  assert.deepEqual(targets.map((t) => t.pod.uid), ["a"]);
  assert.deepEqual(conflicts, []);
});

Deno.test("resolveConflicts() leaves targets on different ports of one address alone", () => {
  const { targets, conflicts } = resolveConflicts([
    target("a", OLD, 1, "10.0.0.5", 80),
    target("b", NEW, 2, "10.0.0.5", 81),
  ]);
  assert.equal(targets.length, 2);
  assert.deepEqual(conflicts, []);
});

Deno.test("resolveConflicts() gives the same result for every input order", () => {
  const all = [
    target("a", NEW, 1),
    target("b", OLD, 2),
    target("c", OLD, 3),
    target("d", undefined, 1),
    target("e", NEW, 4, "fd00::1"),
    target("f", OLD, 4, "10.0.0.6", 8080),
  ];
  const expected = JSON.stringify(resolveConflicts(all));
  for (let i = 0; i < 200; i++) {
    const shuffled = [...all].sort(() => Math.random() - 0.5);
    assert.equal(JSON.stringify(resolveConflicts(shuffled)), expected);
  }
  const { targets, conflicts } = JSON.parse(expected);
  assert.equal(targets.find((t: Target) => keyId(t.key) === "10.0.0.5:80").pod.uid, "b");
  // b is oldest (uid breaks the tie with c); a and the timeless d come after.
  const dropped = conflicts.map((c: { dropped: { pod: { uid: string } } }) => c.dropped.pod.uid);
  assert.deepEqual(dropped, ["c", "a", "d"]);
});
