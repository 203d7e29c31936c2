/**
 * The agent core's loop: first full lists, marks, resyncs, its view, attach waits, stop, and a
 * pod it cannot evaluate. Conflicts, addresses, capacity and the node's networks have files of
 * their own.
 */
import assert from "node:assert/strict";
import type { Pod } from "../pods/pod.ts";
import {
  ATTACHED_TO_NET1,
  CONFIG,
  entry,
  ids,
  pod,
  setup,
} from "../../tests/helpers/core_world.ts";

Deno.test("AgentCore deletes nothing before every source's first full list", async () => {
  const t = setup(["api", "dir"]);
  t.store.put(entry("10.0.0.99", 80, 3)); // left by the previous agent
  await t.core.start();
  t.sources[0].list(pod("a", "10.0.0.1", 1));
  await t.settle();
  assert.deepEqual(ids(t.store), ["10.0.0.1:8080=1", "10.0.0.99:80=3"]);
  assert.equal(t.core.view().firstFullListApplied, false);
  t.sources[1].list();
  await t.settle();
  assert.deepEqual(ids(t.store), ["10.0.0.1:8080=1"]);
  assert.equal(t.core.view().firstFullListApplied, true);
  await t.core.stop();
});

Deno.test("AgentCore writes the mark for the pod's network", async () => {
  const t = setup();
  await t.core.start();
  t.sources[0].list(pod("a", "10.0.0.1", 7));
  await t.settle();
  assert.deepEqual(t.store.entries(), [entry("10.0.0.1", 8080, 7)]);
  assert.equal(t.store.entries()[0].value.mark, 0x71000);
  await t.core.stop();
});

Deno.test("AgentCore resync repairs entries deleted or changed behind its back", async () => {
  const t = setup();
  await t.core.start();
  t.sources[0].list(pod("a", "10.0.0.1", 1), pod("b", "10.0.0.2", 2));
  await t.settle();
  t.store.remove(entry("10.0.0.1", 8080, 1).key);
  t.store.put(entry("10.0.0.2", 8080, 9));
  await t.settle(CONFIG.resyncMs);
  assert.deepEqual(ids(t.store), ["10.0.0.1:8080=1", "10.0.0.2:8080=2"]);
  await t.core.stop();
});

Deno.test("AgentCore reports a pod's problem once while it persists", async () => {
  const t = setup();
  await t.core.start();
  t.sources[0].list(pod("a", "10.0.0.1", 1, undefined, "nope"));
  await t.settle();
  await t.settle(CONFIG.resyncMs);
  assert.deepEqual(t.skips.map((s) => s.reason), ["named-port"]);
  t.sources[0].list();
  await t.settle();
  t.sources[0].list(pod("a", "10.0.0.1", 1, undefined, "nope"));
  await t.settle();
  assert.equal(t.skips.length, 2, "reported again after it went away and came back");
  await t.core.stop();
});

Deno.test("AgentCore.view() describes each target's pod and probe", async () => {
  const t = setup();
  await t.core.start();
  t.sources[0].list(pod("a", "10.0.0.1", 4));
  await t.settle();
  const snap = t.core.view();
  assert.equal(snap.synced, true);
  assert.deepEqual(snap.counts, { pods: 1, targets: 1, conflicts: 0, skips: 0, mismatches: 0 });
  const [view] = snap.targets;
  assert.deepEqual(view.entry, entry("10.0.0.1", 8080, 4));
  assert.equal(`${view.pod.namespace}/${view.pod.name}`, "ns/p-a");
  assert.equal(view.container, "app");
  assert.equal(view.probe, "readiness");
  assert.equal(view.http?.path, "/ready");
  assert.equal(view.network, "net4");
  await t.core.stop();
});

Deno.test("AgentCore.view() shares the current state without a copy; a reconcile replaces it", async () => {
  const t = setup();
  await t.core.start();
  t.sources[0].list(pod("a", "10.0.0.1", 4));
  await t.settle();
  const view = t.core.view();
  assert.equal(t.core.view().targets, view.targets, "no copy per call");
  t.sources[0].list(pod("a", "10.0.0.2", 4));
  await t.settle();
  assert.equal(t.core.view().targets[0].entry.key.address, "10.0.0.2");
  assert.equal(view.targets[0].entry.key.address, "10.0.0.1", "an earlier view is never changed");
  await t.core.stop();
});

Deno.test("AgentCore.registerAttachment() resolves once the pod's targets are in the store", async () => {
  const t = setup();
  await t.core.start();
  t.sources[0].list(pod("a", undefined, undefined)); // the API has no IP nor network yet
  await t.settle();
  assert.deepEqual(ids(t.store), []);
  await t.core.registerAttachment({
    namespace: "ns",
    name: "p-a",
    uid: "a",
    ips: ["10.0.0.8"],
    network: "red",
    networkId: 5,
  });
  assert.deepEqual(ids(t.store), ["10.0.0.8:8080=5"]);
  await t.core.removeAttachment("a");
  assert.deepEqual(ids(t.store), []);
  await t.core.stop();
});

Deno.test("AgentCore removes what a previous agent left at an address attached before the first full list, whatever its port, and nothing elsewhere", async () => {
  const t = setup();
  // Left by the previous agent: a pod of network 2 deleted while no agent ran, and another pod.
  t.store.put(entry("10.0.0.8", 9000, 2));
  t.store.put(entry("10.0.0.99", 80, 3));
  await t.core.start();
  // The node attaches 10.0.0.8 to a pod of network 1 before the API's first list.
  await t.core.registerAttachment(ATTACHED_TO_NET1);
  assert.equal(t.core.view().firstFullListApplied, false);
  assert.deepEqual(ids(t.store), ["10.0.0.99:80=3"]);
  // The API lists the pod: its target is written, and the rest of the old map goes.
  t.sources[0].list(pod("a", "10.0.0.8", 1));
  await t.settle();
  assert.deepEqual(ids(t.store), ["10.0.0.8:8080=1"]);
  await t.core.stop();
});

Deno.test("AgentCore.stop() stops the sources and leaves the store in place", async () => {
  const t = setup();
  await t.core.start();
  t.sources[0].list(pod("a", "10.0.0.1", 1));
  await t.settle();
  await t.core.stop();
  assert.equal(t.sources[0].stopped, true);
  t.sources[0].list();
  await t.settle(CONFIG.resyncMs * 2);
  assert.deepEqual(ids(t.store), ["10.0.0.1:8080=1"]);
  assert.equal(t.clock.countTimers(), 0);
});

/** A pod whose spec carries an object nested `depth` levels deep. */
function deeplyNested(uid: string, depth: number): Pod {
  const hostile = pod(uid, "10.0.0.66", 1);
  let inner: Record<string, unknown> = {};
  const root = inner;
  for (let i = 0; i < depth; i++) inner = (inner.x = {}) as Record<string, unknown>;
  (hostile.spec as Record<string, unknown>).extra = root;
  return hostile;
}

Deno.test("AgentCore skips a pod nested thousands of levels deep and writes the others' targets", async () => {
  const t = setup(["api", "dir"]);
  await t.core.start();
  t.sources[0].list(pod("a", "10.0.0.1", 1), deeplyNested("hostile", 20_000));
  t.sources[1].list(pod("z", "10.0.0.2", 2), deeplyNested("hostile", 20_000));
  await t.settle();
  const report = t.core.view().lastReconcile!;
  assert.equal(report.error, undefined, "the reconcile as a whole succeeds");
  assert.deepEqual(ids(t.store), ["10.0.0.1:8080=1", "10.0.0.2:8080=2"]);
  const skip = t.skips.find((s) => s.pod.uid === "hostile");
  assert.ok(skip, "the hostile pod is reported");
  assert.equal(skip.reason, "malformed");
  assert.equal(`${skip.pod.namespace}/${skip.pod.name}`, "ns/p-hostile");
  assert.match(skip.message, /could not be evaluated/);
  assert.equal(t.core.view().firstFullListApplied, true);
  await t.core.stop();
});
