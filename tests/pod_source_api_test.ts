/**
 * ApiPodSource through the real client-node against the test API server:
 * list then watch, the node field selector, BOOKMARK, 410 Gone, watch errors
 * and an API server that goes away and comes back. The source's own waits
 * (restart backoff, reconnect delays, liveness checks) run on fake time that
 * the test advances; only the HTTP traffic runs in real time.
 */
import assert from "node:assert/strict";
import { ApiPodSource, podFieldSelector } from "../lib/pods/api_source.ts";
import { loadKubeConfig } from "../lib/kube/client.ts";
import { assertUsable, type Pod } from "../lib/pods/pod.ts";
import type { PodSink } from "../lib/pods/source.ts";
import { type KubeObject, TestApiServer } from "./api_server/mod.ts";
import { fakeTime } from "./helpers/fake_time.ts";
import { waitFor, type WaitOptions } from "./helpers/wait.ts";

const NODE = "node-a";

/** Records every call and keeps the pods the sink currently believes in. */
class RecordingSink implements PodSink {
  calls: { op: "replaceAll" | "upsert" | "remove"; source: string; detail: string }[] = [];
  lists: Pod[][] = [];
  pods = new Map<string, Pod>();

  replaceAll(source: string, pods: Pod[]): void {
    this.calls.push({
      op: "replaceAll",
      source,
      detail: pods.map((p) => p.metadata.name).join(","),
    });
    this.lists.push(pods);
    this.pods = new Map(pods.map((p) => [p.metadata.uid, p]));
  }
  upsert(source: string, pod: Pod): void {
    this.calls.push({ op: "upsert", source, detail: pod.metadata.name });
    this.pods.set(pod.metadata.uid, pod);
  }
  remove(source: string, uid: string): void {
    this.calls.push({ op: "remove", source, detail: uid });
    this.pods.delete(uid);
  }
  names(): string[] {
    return [...this.pods.values()].map((p) => p.metadata.name).sort();
  }
}

function pod(name: string, node = NODE, extra: Record<string, unknown> = {}): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "default", labels: { app: name } },
    spec: { nodeName: node, containers: [{ name: "c", image: "i" }] },
    status: { phase: "Running", podIP: "10.0.0.1", podIPs: [{ ip: "10.0.0.1" }] },
    ...extra,
  };
}

/** Names of the pods on NODE in the server, the truth the sink must converge to. */
function serverNames(server: TestApiServer): string[] {
  return server.store.list(server.typeOf({ apiVersion: "v1", kind: "Pod" }), {}).items
    .filter((p) => (p.spec as { nodeName?: string }).nodeName === NODE)
    .map((p) => p.metadata!.name!).sort();
}

/** Fake time the source's waits see advances by this much between two checks of a condition. */
const STEP_MS = 10;

async function setup(
  options: {
    restarts?: unknown[];
    livenessMs?: number;
    pageSize?: number;
    maxPodBytes?: number;
    annotations?: string[];
  } = {},
) {
  const server = await TestApiServer.start();
  const kubeConfig = loadKubeConfig({ kubeconfig: await server.writeKubeconfig() });
  const { clock, timers } = fakeTime();
  const source = new ApiPodSource({
    kubeConfig,
    nodeName: NODE,
    backoff: { initialMs: 10, maxMs: 50 },
    livenessMs: options.livenessMs,
    probeTimeoutMs: 500,
    listTimeoutMs: 2_000,
    pageSize: options.pageSize,
    maxPodBytes: options.maxPodBytes,
    annotations: options.annotations,
    onRestart: (error) => options.restarts?.push(error),
    timers,
  });
  const sink = new RecordingSink();
  return {
    server,
    source,
    sink,
    clock,
    /** Waits for `condition`, moving the source's fake time on by STEP_MS before each check. */
    until<T>(condition: () => T, opts: WaitOptions) {
      return waitFor(async () => {
        await clock.tickAsync(STEP_MS);
        return condition();
      }, opts);
    },
    async [Symbol.asyncDispose]() {
      await source.stop();
      await server.close();
    },
  };
}

const watchRequests = (server: TestApiServer) =>
  server.requests.filter((r) => r.path === "/api/v1/pods" && r.query.get("watch") === "true");

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

// Issue 24, finding 2: what a tenant binds to the node must not grow the agent's memory.
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
