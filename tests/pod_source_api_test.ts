/**
 * ApiPodSource through the real client-node against the test API server: what it delivers (list
 * then watch, the node field selector, plain JSON, finished pods left out, pages, each pod
 * trimmed). How it recovers is in pod_source_api_recovery_test.ts.
 */
import assert from "node:assert/strict";
import { podFieldSelector } from "../lib/pods/api_source.ts";
import { assertUsable } from "../lib/pods/pod.ts";
import { NODE, pod, setup, watchRequests } from "./helpers/api_pod_source.ts";

Deno.test("the source lists the node's pods first, then delivers watch events", async () => {
  await using t = await setup();
  t.server.put(pod("p1"));
  await t.source.start(t.sink);
  await t.until(() => t.sink.lists.length === 1, { message: "the first list" });
  assert.deepEqual(t.sink.lists[0].map((p) => p.metadata.name), ["p1"]);
  await t.until(() => t.server.watchCount("pods") === 1, { message: "the watch" });
  t.server.put(pod("p2"));
  await t.until(() => t.sink.names().includes("p2"), { message: "p2 added" });
  t.server.put(pod("p1", NODE, { status: { phase: "Running", podIPs: [{ ip: "10.0.0.9" }] } }));
  await t.until(() => {
    const p1 = [...t.sink.pods.values()].find((p) => p.metadata.name === "p1");
    return p1?.status?.podIPs?.[0].ip === "10.0.0.9";
  }, { message: "p1 updated" });
  t.server.remove("v1", "Pod", "default", "p1");
  await t.until(() => !t.sink.names().includes("p1"), { message: "p1 removed" });
  assert.deepEqual(t.sink.names(), ["p2"]);
  assert.equal(t.sink.lists.length, 1);
  assert.ok(t.sink.calls.every((c) => c.source === "api"));
});

Deno.test("pods bound to other nodes are never delivered", async () => {
  await using t = await setup();
  t.server.put(pod("other-1", "node-b"));
  t.server.put(pod("mine-1"));
  await t.source.start(t.sink);
  await t.until(() => t.server.watchCount("pods") === 1, { message: "the watch" });
  t.server.put(pod("other-2", "node-b"));
  t.server.put(pod("mine-2"));
  await t.until(() => t.sink.names().includes("mine-2"), { message: "mine-2" });
  const delivered = t.sink.calls.map((c) => c.detail).join(",");
  assert.doesNotMatch(delivered, /other/);
  assert.deepEqual(t.sink.lists[0].map((p) => p.metadata.name), ["mine-1"]);
  const list = t.server.requests.find((r) => r.path === "/api/v1/pods" && !r.query.has("watch"));
  assert.equal(list?.query.get("fieldSelector"), podFieldSelector(NODE));
});

Deno.test("pods from list and watch are plain JSON with string timestamps", async () => {
  await using t = await setup();
  t.server.put(pod("p1"));
  await t.source.start(t.sink);
  await t.until(() => t.server.watchCount("pods") === 1, { message: "the watch" });
  t.server.put(pod("p2"));
  await t.until(() => t.sink.names().includes("p2"), { message: "p2" });
  for (const p of t.sink.pods.values()) {
    assert.equal(typeof p.metadata.creationTimestamp, "string");
    assert.equal(Object.getPrototypeOf(p), Object.prototype);
  }
});

// What a tenant binds to the node must not grow the agent's memory.
Deno.test("pods that finished are neither listed nor kept, and one that finishes leaves", async () => {
  await using t = await setup();
  t.server.put(pod("running"));
  t.server.put(pod("done", NODE, { status: { phase: "Succeeded" } }));
  t.server.put(pod("crashed", NODE, { status: { phase: "Failed" } }));
  await t.source.start(t.sink);
  await t.until(() => t.server.watchCount("pods") === 1, { message: "the watch" });
  assert.deepEqual(t.sink.lists[0].map((p) => p.metadata.name), ["running"]);
  t.server.put(pod("later"));
  await t.until(() => t.sink.names().includes("later"), { message: "later added" });
  t.server.put(pod("later", NODE, { status: { phase: "Failed" } }));
  await t.until(() => !t.sink.names().includes("later"), { message: "later gone" });
  assert.deepEqual(t.sink.names(), ["running"]);
  const watch = watchRequests(t.server).at(-1)!;
  assert.equal(watch.query.get("fieldSelector"), podFieldSelector(NODE));
});

Deno.test("the list comes in pages, and every page's pods are delivered as one list", async () => {
  await using t = await setup({ pageSize: 4 });
  for (let i = 0; i < 10; i++) t.server.put(pod(`p${i}`));
  t.server.put(pod("other", "node-b"));
  await t.source.start(t.sink);
  await t.until(() => t.server.watchCount("pods") === 1, { message: "the watch" });
  assert.equal(t.sink.lists.length, 1);
  assert.equal(t.sink.lists[0].length, 10);
  const lists = t.server.requests.filter((r) => r.path === "/api/v1/pods" && !r.query.has("watch"));
  assert.deepEqual(lists.map((r) => r.query.get("limit")), ["4", "4", "4"]);
  assert.deepEqual(lists.map((r) => r.query.has("continue")), [false, true, true]);
  // The watch resumes from the list's version: nothing is listed twice.
  t.server.put(pod("p10"));
  await t.until(() => t.sink.names().includes("p10"), { message: "p10 added" });
  assert.equal(t.sink.lists.length, 1);
});

Deno.test("each pod is trimmed to Lace's fields and annotations, and one too large is kept by identity", async () => {
  await using t = await setup({ maxPodBytes: 2048, annotations: ["lace.io/network"] });
  const padding = { name: "pad", value: "x".repeat(100_000) };
  const annotated = (name: string, containers: unknown[]) =>
    pod(name, NODE, {
      metadata: {
        name,
        namespace: "default",
        annotations: { "lace.io/network": "blue", "tenant/huge": "y".repeat(200_000) },
      },
      spec: { nodeName: NODE, containers },
    });
  const probed = (i: number) => ({
    name: `c${i}`,
    image: "i",
    env: [padding],
    readinessProbe: { tcpSocket: { port: 80 + i } },
  });
  t.server.put(annotated("small", [probed(0)]));
  t.server.put(annotated("listed-huge", Array.from({ length: 50 }, (_, i) => probed(i))));
  await t.source.start(t.sink);
  await t.until(() => t.server.watchCount("pods") === 1, { message: "the watch" });
  t.server.put(annotated("watched-huge", Array.from({ length: 50 }, (_, i) => probed(i))));
  await t.until(() => t.sink.names().includes("watched-huge"), { message: "watched-huge" });
  const byName = new Map([...t.sink.pods.values()].map((p) => [p.metadata.name, p]));
  const small = byName.get("small")!;
  assert.deepEqual(small.metadata.annotations, { "lace.io/network": "blue" });
  assert.deepEqual(small.spec.containers, [{
    name: "c0",
    readinessProbe: { tcpSocket: { port: 80 } },
  }]);
  assert.ok(JSON.stringify(small).length < 1024);
  for (const name of ["listed-huge", "watched-huge"]) {
    const huge = byName.get(name)!;
    assert.deepEqual(huge.spec, { nodeName: NODE, containers: [] }, name);
    assert.throws(() => assertUsable(huge), /over the cap of 2048/);
  }
});
