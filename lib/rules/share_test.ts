import assert from "node:assert/strict";
import { forAll } from "../../tests/helpers/property.ts";
import { capTargets, failedWrites, fairShares, shareMap } from "./share.ts";
import type { Target } from "./targets.ts";

const shares = (wanted: Record<string, number>, capacity: number) =>
  Object.fromEntries(fairShares(new Map(Object.entries(wanted)), capacity));

Deno.test("fairShares() gives every pod what it wants when everything fits", () => {
  assert.deepEqual(shares({ a: 3, b: 5 }, 8), { a: 3, b: 5 });
  assert.deepEqual(shares({}, 0), {});
});

Deno.test("fairShares() trims only the pod that wants more than its share", () => {
  assert.deepEqual(shares({ flood: 1000, a: 4, b: 6 }, 100), { flood: 90, a: 4, b: 6 });
});

Deno.test("fairShares() splits evenly between pods that all want more, the remainder by uid", () => {
  assert.deepEqual(shares({ c: 50, a: 50, b: 50 }, 100), { a: 34, b: 33, c: 33 });
});

Deno.test("fairShares() serves small pods in full before sharing the rest", () => {
  assert.deepEqual(shares({ a: 10, b: 30, c: 100, d: 100 }, 100), { a: 10, b: 30, c: 30, d: 30 });
});

Deno.test("fairShares() never hands out more than the capacity, whatever the order", () => {
  const wanted = { p1: 7, p2: 70, p3: 700, p4: 1, p5: 33, p6: 33 };
  for (const capacity of [0, 1, 5, 50, 99, 100, 843, 844, 10_000]) {
    const expected = shares(wanted, capacity);
    const total = Object.values(expected).reduce((a, b) => a + b, 0);
    assert.equal(total, Math.min(capacity, 844), `capacity ${capacity}`);
    for (const [uid, n] of Object.entries(expected)) {
      assert.ok(n <= wanted[uid as keyof typeof wanted], `${uid} gets at most what it wants`);
    }
    const reversed = Object.fromEntries(Object.entries(wanted).reverse());
    assert.deepEqual(shares(reversed, capacity), expected, `order independent at ${capacity}`);
  }
});

function targets(uid: string, n: number): Target[] {
  return Array.from({ length: n }, (_, i) => ({
    key: { family: "ipv4" as const, address: `10.0.${uid.charCodeAt(0)}.1`, port: 1000 + i },
    networkId: 1,
    network: "net1",
    pod: { namespace: "ns", name: uid, uid },
    container: "app",
    probe: "readiness" as const,
    handler: "tcpSocket" as const,
  }));
}

Deno.test("capTargets() keeps the first targets in the rules' order and reports the rest", () => {
  const all = targets("a", 5);
  const { writable, over, unwritten } = capTargets(all, 3);
  assert.deepEqual(writable, all.slice(0, 3));
  assert.deepEqual(over, all.slice(3));
  assert.equal(unwritten?.reason, "cap");
  assert.equal(unwritten?.count, 2);
  assert.match(unwritten!.message, /5 probe targets and at most 3 per pod/);
  assert.deepEqual(capTargets(all, 5), { writable: all, over: [] });
});

Deno.test("shareMap() trims the pod that wants most and keeps its first targets by rank", () => {
  const flood = targets("f", 10);
  const small = targets("s", 2);
  const rank = new Map([...flood, ...small].map((t, i) => [t, i]));
  // Winners arrive sorted by key, not in rules order.
  const winners = [...flood].reverse().concat(small);
  const { kept, unwritten } = shareMap(winners, (t) => rank.get(t)!, 6);
  assert.deepEqual(kept, winners.filter((t) => kept.includes(t)), "in the winners' order");
  assert.deepEqual(kept.filter((t) => t.pod.uid === "s"), small);
  assert.deepEqual(kept.filter((t) => t.pod.uid === "f").map((t) => t.key.port).sort(), [
    1000,
    1001,
    1002,
    1003,
  ]);
  assert.deepEqual(unwritten.map((u) => [u.pod.uid, u.reason, u.count, u.wanted]), [
    ["f", "map-full", 6, 10],
  ]);
  assert.match(unwritten[0].message, /fair share of 4 of its 10/);
});

Deno.test("shareMap() keeps everything when it fits", () => {
  const all = [...targets("a", 3), ...targets("b", 3)];
  assert.deepEqual(shareMap(all, () => 0, 6), { kept: all, unwritten: [] });
});

Deno.test("failedWrites() tells a full map from other write errors, per pod", () => {
  const a = targets("a", 3);
  const b = targets("b", 1);
  const all = [...a, ...b].map((t) => ({ key: t.key, pod: t.pod }));
  const result = failedWrites([
    { key: a[0].key, code: "E2BIG", error: "full" },
    { key: a[1].key, code: "E2BIG", error: "full" },
    { key: b[0].key, code: "EPERM", error: "bpf_map_update_elem: EPERM" },
    { key: { family: "ipv4", address: "10.9.9.9", port: 1 }, code: "E2BIG" }, // nobody's
  ], all);
  assert.deepEqual(result.map((u) => [u.pod.uid, u.reason, u.count, u.wanted]), [
    ["a", "map-full", 2, 3],
    ["b", "write-error", 1, 1],
  ]);
  assert.match(result[1].message, /EPERM/);
  assert.deepEqual(failedWrites([], all), []);
});

Deno.test("property: fairShares() fills the capacity max-min fairly over random demands (seeded)", () => {
  forAll({ seed: 5000, runs: 1000 }, (random) => {
    const wanted = new Map(
      Array.from({ length: random.int(0, 8) }, (_, i) => [`u${i}`, random.int(0, 50)]),
    );
    const total = [...wanted.values()].reduce((a, b) => a + b, 0);
    const capacity = random.pick([total, total + 1, Math.max(0, total - 1), random.int(0, 200)]);
    const allowed = fairShares(wanted, capacity);
    const given = [...allowed.values()].reduce((a, b) => a + b, 0);
    assert.equal(given, Math.min(total, capacity), "the map is filled, never overfilled");
    for (const [uid, n] of allowed) {
      assert.ok(n >= 0 && n <= wanted.get(uid)!, `${uid}: 0..wanted`);
      // A trimmed pod gets at least as much as anyone else, give or take the one-entry remainder.
      if (n < wanted.get(uid)!) {
        for (const m of allowed.values()) assert.ok(n >= m - 1, `${uid} got ${n}, another ${m}`);
      }
    }
  });
});

Deno.test("capTargets() writes exactly cap targets and reports one more", () => {
  const all = targets("a", 4);
  assert.equal(capTargets(all, 4).unwritten, undefined);
  const { writable, unwritten } = capTargets(all, 3);
  assert.equal(writable.length, 3);
  assert.deepEqual([unwritten?.count, unwritten?.wanted], [1, 4]);
});

Deno.test("fairShares() gives the one-entry remainder by uid, not by demand or input order", () => {
  assert.deepEqual(shares({ b: 50, a: 100 }, 51), { a: 26, b: 25 });
  assert.deepEqual(shares({ b: 100, a: 100 }, 3), { a: 2, b: 1 });
});

Deno.test("shareMap() says how many of a pod's targets it keeps and drops", () => {
  const { unwritten } = shareMap([...targets("a", 3), ...targets("b", 1)], () => 0, 3);
  assert.deepEqual(unwritten.map((u) => [u.pod.uid, u.count, u.wanted]), [["a", 1, 3]]);
  assert.equal(
    unwritten[0].message,
    "The probe map (3 entries) cannot hold every pod's targets: this pod gets a fair share of 2 of its 3, and the kubelet's probes to the other 1 are not tagged into its network",
  );
});

Deno.test("failedWrites() counts E2BIG and ENOSPC each as a full map, any other code as a write error", () => {
  const all = targets("a", 3);
  const failed = (code: string) => failedWrites([{ key: all[0].key, code, error: code }], all);
  for (const code of ["E2BIG", "ENOSPC"]) {
    assert.deepEqual(failed(code).map((u) => [u.reason, u.message]), [[
      "map-full",
      "The probe map is full: some of this pod's probe targets could not be written, and the kubelet's probes to them are not tagged into its network",
    ]]);
  }
  assert.deepEqual(failed("EPERM").map((u) => [u.reason, u.count, u.wanted]), [[
    "write-error",
    1,
    3,
  ]]);
});
