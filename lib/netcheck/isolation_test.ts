import assert from "node:assert/strict";
import {
  crossNetworkPairs,
  isolationVerdict,
  type NetworkEndpoint,
  NetworkMatrix,
} from "./isolation.ts";

const endpoints = (network: number, n: number): NetworkEndpoint[] =>
  Array.from({ length: n }, (_, i) => ({
    pod: `p${network}-${i}`,
    node: `node-${i}`,
    address: `10.0.0.${i}`,
    network,
  }));

Deno.test("crossNetworkPairs() yields every pod of each network to every pod of each other, once", () => {
  const nets = [endpoints(0, 3), endpoints(1, 3), endpoints(2, 2)];
  const pairs = [...crossNetworkPairs(nets)];
  // Σ over ordered network pairs of |X|·|Y|: 3·3 + 3·2 + 3·3 + 3·2 + 2·3 + 2·3.
  assert.equal(pairs.length, 42);
  assert.ok(pairs.every((p) => p.from.network !== p.to.network));
  assert.equal(new Set(pairs.map((p) => `${p.from.pod}>${p.to.pod}`)).size, 42);
  // Same node across networks is included: a leak inside one node is the likeliest.
  assert.ok(pairs.some((p) => p.from.node === p.to.node));
});

Deno.test("isolationVerdict(): only the target pod naming itself is a leak", () => {
  const answered = (identity: string) => ({
    ok: true as const,
    identity,
    figures: {
      samples: 1,
      connect: { p50: 1, p99: 1, max: 1 },
      request: { p50: 1, p99: 1, max: 1 },
    },
  });
  assert.deepEqual(isolationVerdict(answered("p1-0"), "p1-0"), {
    isolated: false,
    errorClass: "LEAK",
    detail: 'answered by "p1-0" itself',
  });
  // Reused addresses: the source's own network answers; that is isolation.
  assert.equal(isolationVerdict(answered("p0-0"), "p1-0").isolated, true);
  assert.equal(
    isolationVerdict({ ok: false, errorClass: "TIMEOUT", message: "x" }, "p1-0").isolated,
    true,
  );
  const garbled = isolationVerdict({ ok: false, errorClass: "BAD_ANSWER", message: "x" }, "p1-0");
  assert.equal(garbled.isolated ? "" : garbled.errorClass, "UNVERIFIED");
});

Deno.test("NetworkMatrix counts per ordered pair of networks and prints the matrix", () => {
  const m = new NetworkMatrix(["tenant-a", "tenant-b"]);
  m.record(0, 0, true);
  m.record(0, 1, true);
  m.record(1, 0, false);
  m.record(1, 0, true);
  assert.equal(m.leaks, 1);
  assert.deepEqual(m.toJSON().cells[1][0], { tested: 2, failed: 1 });
  assert.deepEqual(m.lines(), [
    "from/to       tenant-a      tenant-b",
    "tenant-a      1/1 pass      1/1 isolated",
    "tenant-b      1/2 isolated  0/0 pass",
  ]);
});
