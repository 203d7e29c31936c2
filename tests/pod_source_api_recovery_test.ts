/**
 * ApiPodSource through the real client-node against the test API server, recovering: BOOKMARK,
 * 410 Gone, watch errors, an API server that goes away and comes back, a watch or list that
 * hangs, a failed first list, and stop(). The source's own waits (restart backoff, reconnect
 * delays, liveness checks) run on fake time that the test advances; only the HTTP traffic runs
 * in real time.
 */
import assert from "node:assert/strict";
import { ApiPodSource } from "../lib/pods/api_source.ts";
import { loadKubeConfig } from "../lib/kube/client.ts";
import {
  NODE,
  pod,
  RecordingSink,
  serverNames,
  setup,
  watchRequests,
} from "./helpers/api_pod_source.ts";

Deno.test("a BOOKMARK advances the resourceVersion the watch resumes from", async () => {
  await using t = await setup();
  t.server.put(pod("p1"));
  await t.source.start(t.sink);
  await t.until(() => t.server.watchCount("pods") === 1, { message: "the watch" });
  // A change the filtered watch never sees moves the server's version past the client's.
  t.server.put(pod("elsewhere", "node-b"));
  const bookmarked = t.server.store.resourceVersion;
  t.server.bookmark();
  await t.until(() => t.source.resourceVersion === bookmarked, {
    message: "the bookmark to arrive",
  });
  // Without the bookmark, resuming from the older version would now get 410 and relist.
  t.server.compact();
  const before = watchRequests(t.server).length;
  t.server.closeWatches({ resource: "pods" });
  await t.until(() => watchRequests(t.server).length > before, { message: "a new watch" });
  const resumed = watchRequests(t.server).at(-1)!;
  assert.equal(resumed.query.get("allowWatchBookmarks"), "true");
  assert.equal(resumed.query.get("resourceVersion"), bookmarked);
  await t.until(() => t.server.watchCount("pods") === 1, { message: "the watch" });
  assert.equal(t.sink.lists.length, 1);
});

Deno.test("410 Gone as an ERROR event makes the source relist and converge", async () => {
  await using t = await setup();
  t.server.put(pod("p1"));
  await t.source.start(t.sink);
  await t.until(() => t.server.watchCount("pods") === 1, { message: "the watch" });
  t.server.expireWatches("pods");
  // Made before the client reconnects: only the relist can tell it.
  t.server.remove("v1", "Pod", "default", "p1");
  t.server.put(pod("p2"));
  await t.until(() => t.sink.lists.length === 2, { message: "the relist" });
  await t.until(() => t.sink.names().join() === serverNames(t.server).join(), {
    message: "convergence",
  });
  assert.deepEqual(t.sink.names(), ["p2"]);
});

Deno.test("a watch that fails with HTTP 500 is restarted with backoff and converges", async () => {
  const restarts: unknown[] = [];
  await using t = await setup({ restarts });
  t.server.put(pod("p1"));
  await t.source.start(t.sink);
  await t.until(() => t.server.watchCount("pods") === 1, { message: "the watch" });
  t.server.failNext(3, 500, (r) => r.query.get("watch") === "true");
  t.server.closeWatches({ resource: "pods" });
  t.server.put(pod("p2"));
  t.server.remove("v1", "Pod", "default", "p1");
  await t.until(() => t.source.restarts === 3, { message: "three restarts" });
  await t.until(() => t.sink.names().join() === "p2", { message: "convergence" });
  assert.equal(restarts.length, 3);
  assert.equal((restarts[0] as { statusCode?: number }).statusCode, 500);
  assert.equal(t.sink.lists.length, 1, "resuming from the last version needs no relist");
});

Deno.test("while the API server is down nothing is replaced, then the source converges", async () => {
  await using t = await setup();
  t.server.put(pod("p1"));
  t.server.put(pod("p2"));
  await t.source.start(t.sink);
  await t.until(() => t.server.watchCount("pods") === 1, { message: "the watch" });
  await t.server.stop();
  t.server.remove("v1", "Pod", "default", "p1");
  t.server.put(pod("p3"));
  await t.until(() => t.source.restarts >= 2, { message: "restarts while down" });
  assert.deepEqual(t.sink.names(), ["p1", "p2"], "the source keeps what it had");
  assert.equal(t.sink.lists.length, 1);
  await t.server.restart();
  await t.until(() => t.sink.names().join() === "p2,p3", { message: "convergence" });
  assert.equal(t.sink.lists.length, 2, "the removal arrives through a relist");
  assert.ok(t.sink.lists.every((l) => l.length > 0), "never an empty list");
});

Deno.test("a watch that hangs after its server died is abandoned on a failed liveness probe, then the source converges", async () => {
  const livenessMs = 30_000;
  await using t = await setup({ livenessMs });
  t.server.put(pod("p1"));
  t.server.put(pod("p2"));
  await t.source.start(t.sink);
  await t.until(() => t.server.watchCount("pods") === 1, { message: "the watch" });
  await t.server.stop({ leaveWatchesHanging: true });
  await t.clock.tickAsync(livenessMs / 2);
  assert.equal(t.source.restarts, 0, "a silent watch is trusted for the liveness interval");
  // Two intervals: the first check may come just before the watch has been silent for one.
  await t.clock.tickAsync(2 * livenessMs);
  await t.until(() => t.source.restarts >= 1, { message: "the dead watch noticed" });
  assert.deepEqual(t.sink.names(), ["p1", "p2"], "the source keeps what it had");
  t.server.remove("v1", "Pod", "default", "p1");
  await t.server.restart();
  await t.until(() => t.sink.names().join() === "p2", { message: "convergence" });
});

Deno.test("a watch whose connection breaks is restarted at once, long before a liveness check", async () => {
  // Liveness checks far beyond the test: only the broken connection itself can be noticed.
  const restarts: unknown[] = [];
  await using t = await setup({ livenessMs: 3_600_000, restarts });
  t.server.put(pod("p1"));
  await t.source.start(t.sink);
  await t.until(() => t.server.watchCount("pods") === 1, { message: "the watch" });
  // Under Deno the watch's body neither ends nor fails when its connection breaks; the pool's
  // handler is told, and the KubeConfig passes that on to the source.
  assert.equal(t.server.closeWatches({ error: true }), 1);
  await t.until(() => t.source.restarts >= 1, { message: "the broken watch noticed" });
  assert.match(String(restarts[0]), /the watch's connection failed/);
  t.server.put(pod("p2"));
  await t.until(() => t.sink.names().join() === "p1,p2", { message: "the new watch's pod" });
  assert.equal(t.sink.lists.length, 1, "resumed from the last version, no relist");
});

Deno.test("a list whose answer never ends is given up after its timeout and made again", async () => {
  const restarts: unknown[] = [];
  await using t = await setup({ restarts });
  t.server.put(pod("p1"));
  // The first list's headers arrive, its body never ends: a server that died mid-answer, as
  // Deno's fetch sees it.
  let hung = 0;
  let body: ReadableStreamDefaultController | undefined;
  const remove = t.server.addHandler((request) => {
    const url = new URL(request.url);
    if (url.pathname !== "/api/v1/pods" || url.searchParams.has("watch") || hung++ > 0) return;
    const stream = new ReadableStream({
      start(controller) {
        body = controller;
        controller.enqueue(new TextEncoder().encode("{"));
      },
    });
    return new Response(stream, { headers: { "content-type": "application/json" } });
  });
  try {
    await t.source.start(t.sink);
    await t.until(() => t.sink.lists.length === 1, { message: "the second list" });
  } finally {
    remove();
    // The server's shutdown waits for every answer to end.
    body?.close();
  }
  assert.equal(hung, 2, "the hung list, then the one that answered");
  assert.match(String(restarts[0]), /the pod list got no answer in 2000 ms/);
  assert.deepEqual(t.sink.names(), ["p1"]);
});

Deno.test("a failed first list is retried and never reported as an empty list", async () => {
  await using t = await setup();
  t.server.put(pod("p1"));
  t.server.failNext(2, 503, (r) => r.path === "/api/v1/pods" && !r.query.has("watch"));
  await t.source.start(t.sink);
  await t.until(() => t.sink.lists.length === 1, { message: "the list" });
  assert.equal(t.source.restarts, 2);
  assert.deepEqual(t.sink.lists[0].map((p) => p.metadata.name), ["p1"]);
});

Deno.test("stop() ends the watch, is idempotent, and nothing is delivered afterwards", async () => {
  await using t = await setup();
  // A second source on the same server sees the late pod: once it has, the
  // stopped source would have had it too, had its watch still been open.
  const witness = new ApiPodSource({
    kubeConfig: loadKubeConfig({ kubeconfig: await t.server.writeKubeconfig() }),
    nodeName: NODE,
    backoff: { initialMs: 10, maxMs: 50 },
    probeTimeoutMs: 500,
  });
  const witnessSink = new RecordingSink();
  try {
    await t.source.start(t.sink);
    await witness.start(witnessSink);
    await t.until(() => t.server.watchCount("pods") === 2, { message: "both watches" });
    await t.source.stop();
    await t.source.stop();
    await t.until(() => t.server.watchCount("pods") === 1, {
      message: "the stopped watch to close",
    });
    const calls = t.sink.calls.length;
    t.server.put(pod("late"));
    await t.until(() => witnessSink.names().includes("late"), {
      message: "the witness to get the late pod",
    });
    assert.equal(t.sink.calls.length, calls);
    assert.equal(t.server.watchCount("pods"), 1, "the stopped source never watches again");
  } finally {
    await witness.stop();
  }
});
