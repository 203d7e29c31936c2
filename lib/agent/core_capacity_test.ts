/**
 * The agent core against the per-pod cap and a full probe map (rules/share.ts).
 */
import assert from "node:assert/strict";
import type { Pod } from "../pods/pod.ts";
import { MemoryProbeStore } from "../../tests/helpers/memory_probe_store.ts";
import { CONFIG, entry, ids, pod, setup } from "../../tests/helpers/core_world.ts";

/** A pod in network `networkId` at `ip` with one TCP readiness probe per port, in this order. */
function podWithPorts(uid: string, ip: string, networkId: number, ports: number[]): Pod {
  const p = pod(uid, ip, networkId);
  p.spec.containers = ports.map((port, i) => ({
    name: `c${i}`,
    readinessProbe: { tcpSocket: { port } },
  }));
  return p;
}

Deno.test("AgentCore writes a pod's first targets up to the per-pod cap and reports the rest", async () => {
  const t = setup(["api"], { maxTargetsPerPod: 2 });
  await t.core.start();
  t.sources[0].list(podWithPorts("big", "10.0.0.1", 1, [9003, 9001, 9002]));
  await t.settle();
  await t.settle(CONFIG.resyncMs);
  assert.deepEqual(ids(t.store), ["10.0.0.1:9001=1", "10.0.0.1:9003=1"], "spec order, not key");
  assert.deepEqual(t.unwritten.map((u) => [u.pod.uid, u.reason, u.count, u.wanted]), [
    ["big", "cap", 1, 3],
  ]);
  assert.deepEqual(t.core.view().unwritten.map((u) => u.reason), ["cap"]);
  await t.core.stop();
});

Deno.test("AgentCore shares a small map fairly: a flooding pod is trimmed, the others are written", async () => {
  const t = setup(["api"], {}, new MemoryProbeStore({ capacity: 10 }));
  await t.core.start();
  const flood = Array.from({ length: 30 }, (_, i) => 20000 + i);
  t.sources[0].list(
    podWithPorts("flood", "10.0.0.9", 3, flood),
    podWithPorts("a", "10.0.0.1", 1, [80, 81]),
    podWithPorts("b", "10.0.0.2", 2, [80]),
  );
  await t.settle();
  const written = ids(t.store);
  assert.equal(written.length, 10);
  for (const want of ["10.0.0.1:80=1", "10.0.0.1:81=1", "10.0.0.2:80=2"]) {
    assert.ok(written.includes(want), `${want} in ${written}`);
  }
  assert.equal(t.core.view().lastReconcile!.ops.every((o) => o.ok), true, "no write fails");
  assert.deepEqual(t.unwritten.map((u) => [u.pod.uid, u.reason, u.count]), [
    ["flood", "map-full", 23],
  ]);
  await t.core.stop();
});

Deno.test("AgentCore reports the pods whose writes a full map refused, once while it lasts", async () => {
  const store = new MemoryProbeStore({ capacity: 2 });
  store.put(entry("10.0.0.98", 1, 3)); // a previous agent's entries fill the map;
  store.put(entry("10.0.0.99", 1, 3)); // deletes wait for every source's full list
  const t = setup(["api", "dir"], {}, store);
  await t.core.start();
  t.sources[0].list(pod("a", "10.0.0.1", 1));
  await t.settle();
  await t.settle(600); // the retry
  assert.deepEqual(t.unwritten.map((u) => [u.pod.uid, u.reason, u.count]), [["a", "map-full", 1]]);
  assert.deepEqual(t.core.view().unwritten.map((u) => u.reason), ["map-full"]);
  // The full list frees the stale entries; removes go first, so the put fits at once.
  t.sources[1].list();
  await t.settle();
  assert.deepEqual(ids(t.store), ["10.0.0.1:8080=1"]);
  assert.deepEqual(t.core.view().unwritten, []);
  await t.core.stop();
});
