/** EventRecorder through the real client-node against the test API server's Event validation. */
import assert from "node:assert/strict";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { EventRecorder } from "../lib/kube/events.ts";
import { nodeObjectRef, podObjectRef } from "../lib/kube/event_sink.ts";
import { normalisePod } from "../lib/pods/pod.ts";
import { type RequestRecord, TestApiServer } from "./api_server/mod.ts";
import { fakeTime } from "./helpers/fake_time.ts";
import { waitFor } from "./helpers/wait.ts";

Deno.test("Events from the recorder pass API validation and repeats raise the count", async () => {
  await using server = await TestApiServer.start();
  const kc = new KubeConfig();
  kc.loadFromString(server.kubeconfig());
  const core = kc.makeApiClient(CoreV1Api);
  const created = server.put({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "web-1", namespace: "default" },
    spec: { nodeName: "node-a", containers: [] },
  });
  const { timers } = fakeTime();
  const events = new EventRecorder({ api: core, nodeName: "node-a", timers });
  const ref = podObjectRef(normalisePod(created).metadata);
  events.warn(ref, "ProbeHostIgnored", "probe host 10.9.9.9 is not one of the pod's IPs");
  events.warn(ref, "ProbeHostIgnored", "probe host 10.9.9.9 is not one of the pod's IPs");
  events.warn(nodeObjectRef("node-a"), "KubeletCgroupMismatch", "kubelet moved");
  await events.flush();
  assert.equal(events.stats.created, 2);
  assert.equal(events.stats.aggregated, 1);
  assert.deepEqual(Object.values(events.stats.dropped).filter((n) => n > 0), []);
  const list = await core.listEventForAllNamespaces();
  const byReason = new Map(list.items.map((e) => [e.reason, e]));
  assert.equal(byReason.get("ProbeHostIgnored")?.count, 2);
  assert.equal(byReason.get("ProbeHostIgnored")?.involvedObject.uid, created.metadata!.uid);
  assert.equal(byReason.get("KubeletCgroupMismatch")?.metadata.namespace, "default");
});

Deno.test("403, 500 and an unanswered request from the real client lose no other queued Event and throw nothing", async () => {
  await using server = await TestApiServer.start({ namespaces: ["default", "a", "b", "c", "d"] });
  const kc = new KubeConfig();
  kc.loadFromString(server.kubeconfig());
  const core = kc.makeApiClient(CoreV1Api);
  const eventPost = (ns: string) => (r: RequestRecord) =>
    r.method === "POST" && r.path === `/api/v1/namespaces/${ns}/events`;
  server.failNext(1, 403, eventPost("a"));
  server.failNext(2, 500, eventPost("b"));
  // The first Event of namespace c gets no answer until the test lets it through.
  const held = Promise.withResolvers<void>();
  let holdNext = true;
  server.addHandler(async (request, route) => {
    if (request.method !== "POST" || route?.namespace !== "c" || !holdNext) return undefined;
    holdNext = false;
    await held.promise;
    return undefined;
  });
  const { clock, timers } = fakeTime();
  const events = new EventRecorder({
    api: core,
    nodeName: "node-a",
    timers,
    retryDelayMs: 1000,
    requestTimeoutMs: 30_000,
  });
  const posts = () => server.requests.filter((r) => r.method === "POST").length;
  try {
    for (const ns of ["a", "b", "c", "d"]) {
      events.warn(podObjectRef({ namespace: ns, name: "web", uid: `uid-${ns}` }), "R", ns);
    }
    await waitFor(() => posts() === 2, { message: "a's 403 and b's first 500" });
    await clock.tickAsync(1000);
    await waitFor(() => posts() === 3, { message: "b's retry after 1 s" });
    await clock.tickAsync(2000);
    await waitFor(() => posts() === 5, { message: "b's second retry, c's request held" });
    await clock.tickAsync(30_000);
    // c's request was given up on; the server answers it now (it creates the Event), and the
    // retry finds the name taken: the Event is there, so it counts as created.
    held.resolve();
    await waitFor(async () => (await core.listNamespacedEvent({ namespace: "c" })).items.length, {
      message: "c's held request to be answered",
    });
    await clock.tickAsync(1000);
    await waitFor(() => events.queued === 0 && posts() === 7, { message: "c's retry and d" });
    await events.flush();
    assert.equal(events.stats.dropped["api-error"], 1, "only the 403 is lost");
    assert.equal(events.stats.created, 3);
    for (const ns of ["b", "c", "d"]) {
      const list = await core.listNamespacedEvent({ namespace: ns });
      assert.equal(list.items.length, 1, `one Event in ${ns}`);
      assert.equal(list.items[0].count, 1);
    }
  } finally {
    held.resolve();
    await events.stop();
  }
});
