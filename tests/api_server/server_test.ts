import assert from "node:assert/strict";
import { CoreV1Api, KubeConfig, V1MicroTime, Watch } from "@kubernetes/client-node";
import { TestApiServer } from "./mod.ts";
import { waitFor } from "../helpers/wait.ts";

function client(server: TestApiServer): { kc: KubeConfig; core: CoreV1Api } {
  const kc = new KubeConfig();
  kc.loadFromString(server.kubeconfig());
  return { kc, core: kc.makeApiClient(CoreV1Api) };
}

function pod(name: string, node: string, namespace = "default") {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace, labels: { app: name } },
    spec: { nodeName: node, containers: [{ name: "c", image: "i" }] },
  };
}

Deno.test("a pod created through the client can be read back with server-set metadata", async () => {
  await using server = await TestApiServer.start();
  const { core } = client(server);
  const created = await core.createNamespacedPod({ namespace: "default", body: pod("a", "n1") });
  assert.match(created.metadata!.uid!, /^[0-9a-f-]{36}$/);
  assert.equal(created.status?.phase, "Pending");
  const read = await core.readNamespacedPod({ namespace: "default", name: "a" });
  assert.equal(read.metadata!.resourceVersion, created.metadata!.resourceVersion);
  assert.ok(read.metadata!.creationTimestamp instanceof Date);
});

async function rejection(
  promise: Promise<unknown>,
): Promise<{ code: number; body: { reason?: string; message?: string } }> {
  try {
    await promise;
  } catch (error) {
    const e = error as { code: number; body: string | { reason?: string } };
    return { code: e.code, body: typeof e.body === "string" ? JSON.parse(e.body) : e.body };
  }
  throw new Error("Expected the request to be rejected");
}

function event(overrides: Record<string, unknown> = {}) {
  const now = new Date();
  return {
    metadata: { name: "web-1.17a", namespace: "default" },
    involvedObject: {
      kind: "Pod",
      apiVersion: "v1",
      name: "web-1",
      namespace: "default",
      uid: "u1",
    },
    reason: "ProbeHostIgnored",
    message: "m",
    type: "Warning",
    source: { component: "lace", host: "n1" },
    reportingComponent: "lace.io/agent",
    reportingInstance: "n1",
    action: "Reconcile",
    firstTimestamp: now,
    lastTimestamp: now,
    eventTime: new V1MicroTime(now),
    count: 1,
    ...overrides,
  };
}

Deno.test("creating an object that exists is rejected with 409 AlreadyExists", async () => {
  await using server = await TestApiServer.start();
  const { core } = client(server);
  await core.createNamespacedPod({ namespace: "default", body: pod("a", "n1") });
  const { code, body } = await rejection(
    core.createNamespacedPod({ namespace: "default", body: pod("a", "n1") }),
  );
  assert.equal(code, 409);
  assert.equal(body.reason, "AlreadyExists");
});

Deno.test("an object in a namespace that does not exist is rejected with 404", async () => {
  await using server = await TestApiServer.start();
  const { core } = client(server);
  const { code, body } = await rejection(
    core.createNamespacedPod({ namespace: "nope", body: pod("a", "n1", "nope") }),
  );
  assert.equal(code, 404);
  assert.equal(body.reason, "NotFound");
  assert.match(body.message!, /namespaces "nope" not found/);
});

Deno.test("generateName produces a unique name", async () => {
  await using server = await TestApiServer.start();
  const { core } = client(server);
  const body = { metadata: { generateName: "lace-check-" } };
  const a = await core.createNamespace({ body });
  const b = await core.createNamespace({ body });
  assert.match(a.metadata!.name!, /^lace-check-[a-z0-9]{5}$/);
  assert.notEqual(a.metadata!.name, b.metadata!.name);
});

Deno.test("list honours label and field selectors and rejects unsupported fields", async () => {
  await using server = await TestApiServer.start();
  const { core } = client(server);
  for (const [name, node] of [["a", "n1"], ["b", "n1"], ["c", "n2"]]) {
    await core.createNamespacedPod({ namespace: "default", body: pod(name, node) });
  }
  const byField = await core.listPodForAllNamespaces({ fieldSelector: "spec.nodeName=n1" });
  assert.deepEqual(byField.items.map((p) => p.metadata!.name), ["a", "b"]);
  const byLabel = await core.listNamespacedPod({
    namespace: "default",
    labelSelector: "app in (a,c),app!=c",
  });
  assert.deepEqual(byLabel.items.map((p) => p.metadata!.name), ["a"]);
  const { code, body } = await rejection(
    core.listPodForAllNamespaces({ fieldSelector: "spec.image=x" }),
  );
  assert.equal(code, 400);
  assert.equal(body.reason, "BadRequest");
  assert.match(body.message!, /spec\.image/);
});

Deno.test("an update with a stale resourceVersion is rejected with 409 Conflict", async () => {
  await using server = await TestApiServer.start();
  const { core } = client(server);
  const created = await core.createNamespacedPod({ namespace: "default", body: pod("a", "n1") });
  await core.replaceNamespacedPod({
    namespace: "default",
    name: "a",
    body: { ...created, metadata: { ...created.metadata, labels: { x: "1" } } },
  });
  const { code, body } = await rejection(
    core.replaceNamespacedPod({ namespace: "default", name: "a", body: created }),
  );
  assert.equal(code, 409);
  assert.equal(body.reason, "Conflict");
});

Deno.test("status changes only through the status subresource", async () => {
  await using server = await TestApiServer.start();
  const { core } = client(server);
  const created = await core.createNamespacedPod({ namespace: "default", body: pod("a", "n1") });
  const updated = await core.replaceNamespacedPod({
    namespace: "default",
    name: "a",
    body: { ...created, status: { phase: "Running" } },
  });
  assert.equal(updated.status?.phase, "Pending");
  const status = await core.replaceNamespacedPodStatus({
    namespace: "default",
    name: "a",
    body: { ...updated, status: { phase: "Running", podIPs: [{ ip: "10.1.1.1" }] } },
  });
  assert.equal(status.status?.phase, "Running");
});

Deno.test("JSON patch and merge patch both apply", async () => {
  await using server = await TestApiServer.start();
  const { core } = client(server);
  await core.createNamespacedPod({ namespace: "default", body: pod("a", "n1") });
  const patched = await core.patchNamespacedPod({
    namespace: "default",
    name: "a",
    body: [{ op: "add", path: "/metadata/annotations", value: { "lace.io/network-id": "7" } }],
  });
  assert.equal(patched.metadata!.annotations!["lace.io/network-id"], "7");
  const response = await fetch(`${server.url}/api/v1/namespaces/default/pods/a`, {
    method: "PATCH",
    headers: { "content-type": "application/merge-patch+json" },
    body: JSON.stringify({ metadata: { annotations: { "lace.io/network-id": null, b: "2" } } }),
  });
  const merged = await response.json();
  assert.deepEqual(merged.metadata.annotations, { b: "2" });
});

Deno.test("a watch from a resourceVersion older than the history gets an ERROR 410 event", async () => {
  await using server = await TestApiServer.start();
  const { kc, core } = client(server);
  const created = await core.createNamespacedPod({ namespace: "default", body: pod("a", "n1") });
  server.compact();
  const events: { type: string; object: { code?: number; reason?: string } }[] = [];
  const done = Promise.withResolvers<unknown>();
  await new Watch(kc).watch(
    "/api/v1/pods",
    { resourceVersion: Number(created.metadata!.resourceVersion) - 1 },
    (type, object) => events.push({ type, object }),
    done.resolve,
  );
  assert.equal(await done.promise, null, "the stream ends cleanly after the ERROR");
  assert.equal(events.length, 1);
  assert.equal(events[0].type, "ERROR");
  assert.equal(events[0].object.code, 410);
  assert.equal(events[0].object.reason, "Expired");
});

Deno.test("a list at an exact resourceVersion older than the history is 410 Gone", async () => {
  await using server = await TestApiServer.start();
  const { core } = client(server);
  const rv = server.store.resourceVersion;
  await core.createNamespacedPod({ namespace: "default", body: pod("a", "n1") });
  server.compact();
  const { code, body } = await rejection(
    core.listPodForAllNamespaces({ resourceVersion: rv, resourceVersionMatch: "Exact" }),
  );
  assert.equal(code, 410);
  assert.equal(body.reason, "Expired");
});

Deno.test("a watch replays changes after its resourceVersion, then streams live ones", async () => {
  await using server = await TestApiServer.start();
  const { kc, core } = client(server);
  const a = await core.createNamespacedPod({ namespace: "default", body: pod("a", "n1") });
  await core.deleteNamespacedPod({ namespace: "default", name: "a" });
  const events: string[] = [];
  const controller = await new Watch(kc).watch(
    "/api/v1/pods",
    { resourceVersion: a.metadata!.resourceVersion },
    (type, object) => events.push(`${type} ${object.metadata.name}`),
    () => {},
  );
  await core.createNamespacedPod({ namespace: "default", body: pod("b", "n1") });
  await waitFor(() => events.length >= 2, { timeout: 3000, message: "two watch events" });
  controller.abort();
  assert.deepEqual(events, ["DELETED a", "ADDED b"]);
});

Deno.test("injected failures answer with the given status, then requests succeed", async () => {
  await using server = await TestApiServer.start();
  const { core } = client(server);
  server.failNext(1, 503);
  assert.equal((await rejection(core.listNamespacedPod({ namespace: "default" }))).code, 503);
  await core.listNamespacedPod({ namespace: "default" });
});

Deno.test("a stopped server refuses connections and serves the same store after restart", async () => {
  await using server = await TestApiServer.start();
  const { core } = client(server);
  await core.createNamespacedPod({ namespace: "default", body: pod("a", "n1") });
  const port = server.port;
  await server.stop();
  await assert.rejects(core.readNamespacedPod({ namespace: "default", name: "a" }));
  await server.restart();
  assert.equal(server.port, port);
  const read = await core.readNamespacedPod({ namespace: "default", name: "a" });
  assert.equal(read.metadata!.name, "a");
});

Deno.test("deleting a namespace deletes what is in it", async () => {
  await using server = await TestApiServer.start();
  const { core } = client(server);
  await core.createNamespace({ body: { metadata: { name: "tmp" } } });
  await core.createNamespacedPod({ namespace: "tmp", body: pod("a", "n1", "tmp") });
  await core.deleteNamespace({ name: "tmp" });
  assert.equal((await core.listPodForAllNamespaces()).items.length, 0);
});

Deno.test("a complete Event with a microsecond eventTime is accepted", async () => {
  await using server = await TestApiServer.start();
  const { core } = client(server);
  const created = await core.createNamespacedEvent({ namespace: "default", body: event() });
  assert.equal(created.reason, "ProbeHostIgnored");
});

Deno.test("an Event whose eventTime is a plain Date (3 fractional digits) is rejected", async () => {
  await using server = await TestApiServer.start();
  const { core } = client(server);
  const { code, body } = await rejection(
    core.createNamespacedEvent({ namespace: "default", body: event({ eventTime: new Date() }) }),
  );
  assert.equal(code, 400);
  assert.match(body.message!, /eventTime/);
});

Deno.test("an Event with eventTime but no reportingComponent or action is rejected", async () => {
  await using server = await TestApiServer.start();
  const { core } = client(server);
  const { code, body } = await rejection(
    core.createNamespacedEvent({
      namespace: "default",
      body: event({ reportingComponent: undefined, action: undefined }),
    }),
  );
  assert.equal(code, 422);
  assert.match(body.message!, /reportingComponent: Required value/);
  assert.match(body.message!, /action: Required value/);
});

Deno.test("an Event in another namespace than its involved object is rejected", async () => {
  await using server = await TestApiServer.start();
  const { core } = client(server);
  const body = event({
    involvedObject: {
      kind: "Pod",
      apiVersion: "v1",
      name: "web-1",
      namespace: "kube-system",
      uid: "u1",
    },
  });
  const { code } = await rejection(core.createNamespacedEvent({ namespace: "default", body }));
  assert.equal(code, 422);
});

Deno.test("an extra handler answers before normal routing", async () => {
  await using server = await TestApiServer.start();
  server.addHandler((_request, route) =>
    route?.subresource === "exec" ? new Response("exec here") : undefined
  );
  const response = await fetch(`${server.url}/api/v1/namespaces/default/pods/a/exec`);
  assert.equal(await response.text(), "exec here");
});
