/**
 * The agent core with one address and port claimed by two networks (rules/conflicts.ts).
 */
import assert from "node:assert/strict";
import { CONFIG, entry, ids, pod, setup } from "../../tests/helpers/core_world.ts";

Deno.test("AgentCore under older-wins keeps the older pod on a conflict, stably, and reports it once", async () => {
  const t = setup(["api"], { addressConflict: "older-wins" });
  await t.core.start();
  const older = pod("z-old", "10.0.0.5", 1, "2026-01-01T00:00:00Z");
  const newer = pod("a-new", "10.0.0.5", 2, "2026-01-02T00:00:00Z");
  t.sources[0].list(newer, older);
  await t.settle();
  assert.deepEqual(ids(t.store), ["10.0.0.5:8080=1"]);
  t.sources[0].list(older, newer);
  t.sources[0].sink!.upsert("api", {
    ...newer,
    metadata: { ...newer.metadata, resourceVersion: "2" },
  });
  await t.settle();
  await t.settle(CONFIG.resyncMs);
  assert.deepEqual(ids(t.store), ["10.0.0.5:8080=1"]);
  assert.equal(t.conflicts.length, 1);
  assert.equal(t.conflicts[0][1].pod.uid, "a-new");
  assert.equal(t.core.view().conflicts.length, 1);
  await t.core.stop();
});

Deno.test("AgentCore tags a key claimed by two networks for neither, and reports both pods once", async () => {
  const t = setup();
  await t.core.start();
  const older = pod("z-old", "10.0.0.5", 1, "2026-01-01T00:00:00Z");
  const newer = pod("a-new", "10.0.0.5", 2, "2026-01-02T00:00:00Z");
  t.sources[0].list(older, pod("other", "10.0.0.6", 2));
  await t.settle();
  assert.deepEqual(ids(t.store), ["10.0.0.5:8080=1", "10.0.0.6:8080=2"]);
  t.sources[0].list(older, newer, pod("other", "10.0.0.6", 2));
  await t.settle();
  await t.settle(CONFIG.resyncMs);
  assert.deepEqual(ids(t.store), ["10.0.0.6:8080=2"], "the older pod's entry is removed too");
  assert.deepEqual(t.conflicts.map(([, d]) => d.pod.uid).sort(), ["a-new", "z-old"]);
  assert.equal(t.conflicts[0][0].policy, "fail-closed");
  await t.core.stop();
});

Deno.test("AgentCore withdraws a conflicted key left by a previous agent before the first full list", async () => {
  const t = setup(["api", "dir"]);
  t.store.put(entry("10.0.0.5", 8080, 1)); // an older agent gave it to network 1
  t.store.put(entry("10.0.0.99", 80, 3)); // stale, but deletes wait for the full list
  await t.core.start();
  t.sources[0].list(
    pod("a", "10.0.0.5", 1, "2026-01-01T00:00:00Z"),
    pod("b", "10.0.0.5", 2, "2026-01-02T00:00:00Z"),
  );
  await t.settle();
  assert.equal(t.core.view().synced, false);
  assert.deepEqual(ids(t.store), ["10.0.0.99:80=3"]);
  await t.core.stop();
});

Deno.test("AgentCore counts a default-network pod's probe as a claim in conflicts", async () => {
  const t = setup();
  await t.core.start();
  t.sources[0].list(pod("plain", "10.0.0.5", undefined), pod("lace", "10.0.0.5", 2));
  await t.settle();
  assert.deepEqual(ids(t.store), [], "no entry would send the plain pod's probes into network 2");
  assert.deepEqual(t.conflicts.map(([, d]) => [d.pod.uid, d.networkId]).sort(), [
    ["lace", 2],
    ["plain", 0],
  ]);
  await t.core.stop();
});
