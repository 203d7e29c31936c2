import assert from "node:assert/strict";
import type { NetworkEndpoint } from "../cluster/netcheck_cluster.ts";
import {
  crossNetworkPairs,
  isolationVerdict,
  NetworkMatrix,
  probePodNetworks,
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

Deno.test("isolationVerdict(): the target or another network's probe pod answering is a leak, a stranger unverified", () => {
  const answered = (identity: string) => ({
    ok: true as const,
    identity,
    figures: {
      samples: 1,
      connect: { p50: 1, p99: 1, max: 1 },
      request: { p50: 1, p99: 1, max: 1 },
    },
  });
  const probes = probePodNetworks([endpoints(0, 2), endpoints(1, 2), endpoints(2, 2)], [
    "red",
    "green",
    "blue",
  ]);
  // From network 0 to p1-0 of network 1.
  const verdict = (outcome: Parameters<typeof isolationVerdict>[0]) =>
    isolationVerdict(outcome, "p1-0", 0, probes);
  assert.deepEqual(verdict(answered("p1-0")), {
    isolated: false,
    errorClass: "LEAK",
    detail: 'answered by "p1-0" itself',
  });
  // Reused addresses: the source's own network answers; that is isolation.
  assert.equal(verdict(answered("p0-0")).isolated, true);
  assert.equal(verdict({ ok: false, errorClass: "TIMEOUT", message: "x" }).isolated, true);
  // Another network's probe pod than the target answering: the request left its network.
  for (const other of ["p1-1", "p2-0"]) {
    const leak = verdict(answered(other));
    assert.equal(leak.isolated ? "" : leak.errorClass, "LEAK", other);
    assert.match(leak.detail, /the probe pod of network (green|blue) there/);
  }
  // A pod that is none of ours (a tenant's, naming itself anything) proves nothing either way.
  const stranger = verdict(answered("tenant-web-7f9c"));
  assert.equal(stranger.isolated ? "" : stranger.errorClass, "UNVERIFIED");
  assert.match(stranger.detail, /no probe pod of this run/);
  for (const errorClass of ["BAD_ANSWER", "TOO_LONG", "UNKNOWN"] as const) {
    const garbled = verdict({ ok: false, errorClass, message: "x" });
    assert.equal(garbled.isolated ? "" : garbled.errorClass, "UNVERIFIED", errorClass);
  }
});

Deno.test("NetworkMatrix counts per ordered pair of networks and prints the matrix", () => {
  const m = new NetworkMatrix(["tenant-a", "tenant-b"]);
  m.record(0, 0, true);
  m.record(0, 1, true);
  m.record(1, 0, false, true);
  m.record(1, 0, true);
  // Unverified: failed, not a leak.
  m.record(1, 0, false);
  assert.equal(m.leaks, 1);
  assert.deepEqual(m.toJSON().cells[1][0], { tested: 3, failed: 2 });
  assert.deepEqual(m.lines(), [
    "from/to       tenant-a      tenant-b",
    "tenant-a      1/1 pass      1/1 isolated",
    "tenant-b      1/3 isolated  0/0 pass",
  ]);
});
