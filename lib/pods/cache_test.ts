import assert from "node:assert/strict";
import { normalisePod, type Pod } from "./pod.ts";
import { PodCache } from "./cache.ts";

function pod(uid: string, over: Partial<Pod["metadata"]> = {}, extra: Partial<Pod> = {}): Pod {
  return {
    metadata: { name: `p-${uid}`, namespace: "ns", uid, ...over },
    spec: { containers: [{ name: "app" }], ...extra.spec },
    ...(extra.status ? { status: extra.status } : {}),
  };
}

Deno.test("PodCache is synced only after every registered source sent a full list", () => {
  const cache = new PodCache();
  cache.register("api");
  cache.register("dir");
  cache.upsert("api", pod("a"));
  assert.equal(cache.synced, false);
  cache.replaceAll("api", [pod("a")]);
  assert.equal(cache.synced, false);
  cache.replaceAll("dir", []);
  assert.equal(cache.synced, true);
});

Deno.test("PodCache.replaceAll() of one source leaves other sources' pods", () => {
  const cache = new PodCache();
  cache.replaceAll("api", [pod("a")]);
  cache.replaceAll("dir", [pod("b")]);
  cache.replaceAll("api", []);
  assert.deepEqual(cache.pods().map((p) => p.metadata.uid), ["b"]);
});

Deno.test("PodCache ignores pods bound to another node", () => {
  const cache = new PodCache({ nodeName: "n1" });
  cache.replaceAll("dir", [
    pod("a", {}, { spec: { nodeName: "n1", containers: [] } }),
    pod("b", {}, { spec: { nodeName: "n2", containers: [] } }),
    pod("c"),
  ]);
  assert.deepEqual(cache.pods().map((p) => p.metadata.uid), ["a", "c"]);
});

Deno.test("PodCache skips malformed pods without throwing and keeps the rest", () => {
  const cache = new PodCache();
  const bad = [null, 3, { metadata: {} }, { metadata: { name: "x", uid: "x" } }] as unknown[];
  cache.replaceAll("api", [...bad, pod("ok")] as Pod[]);
  cache.upsert("api", { spec: {} } as unknown as Pod);
  assert.deepEqual(cache.pods().map((p) => p.metadata.uid), ["ok"]);
});

Deno.test("PodCache merges one uid: spec from the API, addresses from the CNI view", () => {
  const cache = new PodCache();
  const fromApi = pod("a", { annotations: { team: "x" } }, {
    spec: { containers: [{ name: "app", livenessProbe: { tcpSocket: { port: 80 } } }] },
    status: { phase: "Pending" },
  });
  const fromCni = pod("a", { annotations: { "lace.io/network-id": "7", team: "cni" } }, {
    spec: { containers: [] },
    status: { podIPs: [{ ip: "10.0.0.5" }] },
  });
  cache.upsert("cni", fromCni);
  cache.upsert("api", fromApi);
  const merged = cache.get("a")!;
  assert.equal(merged.spec.containers[0].livenessProbe?.tcpSocket?.port, 80);
  assert.deepEqual(merged.status, { phase: "Pending", podIPs: [{ ip: "10.0.0.5" }] });
  // Annotations come from the best view alone: no other source can add to them.
  assert.deepEqual(merged.metadata.annotations, { team: "x" });
});

Deno.test("PodCache prefers the API's addresses once it has them", () => {
  const cache = new PodCache();
  cache.upsert("cni", pod("a", {}, { status: { podIPs: [{ ip: "10.0.0.5" }] } }));
  cache.upsert("api", pod("a", {}, { status: { podIP: "10.0.0.6" } }));
  assert.deepEqual(cache.get("a")!.status, { podIP: "10.0.0.6" });
});

Deno.test("PodCache notifies on changes and not on a relist of identical pods", () => {
  const changes: string[] = [];
  const cache = new PodCache({ onChange: (s) => changes.push(s) });
  cache.replaceAll("api", [pod("a")]);
  cache.replaceAll("api", [pod("a")]);
  cache.upsert("api", pod("a"));
  assert.deepEqual(changes, ["api"]);
  cache.upsert("api", pod("a", { annotations: { x: "1" } }));
  cache.remove("api", "a");
  cache.remove("api", "a");
  assert.deepEqual(changes, ["api", "api", "api"]);
});

Deno.test("PodCache.get() returns the same object until one of the pod's views changes", () => {
  const cache = new PodCache();
  const changes: string[] = [];
  const c2 = new PodCache({ onChange: (s) => changes.push(s) });
  cache.replaceAll("api", [pod("a"), pod("b")]);
  const a1 = cache.get("a")!;
  const b1 = cache.get("b")!;
  cache.replaceAll("api", [pod("a"), pod("b", { annotations: { x: "1" } })]);
  assert.equal(cache.get("a"), a1, "unchanged pod keeps its merged object");
  assert.notEqual(cache.get("b"), b1);
  assert.deepEqual(cache.get("b")!.metadata.annotations, { x: "1" });
  cache.upsert("cni", pod("a", { annotations: { "lace.io/network": "n" } }));
  assert.equal(cache.get("a"), a1, "a view without addresses changes nothing in the merge");
  cache.upsert("cni", pod("a", {}, { status: { podIPs: [{ ip: "10.0.0.5" }] } }));
  assert.notEqual(cache.get("a"), a1, "a view with the addresses makes a new merge");
  assert.deepEqual(cache.get("a")!.status, { podIPs: [{ ip: "10.0.0.5" }] });
  // An identical relist is not a change.
  const same = [pod("a")];
  c2.replaceAll("api", same);
  c2.replaceAll("api", [pod("a")]);
  c2.replaceAll("api", same);
  assert.deepEqual(changes, ["api"]);
});

Deno.test("PodCache keeps one copy of a pod: a normalised pod is stored as it is and merged alone", () => {
  const cache = new PodCache();
  const view = normalisePod(pod("a", {}, { status: { podIP: "10.0.0.6" } }));
  cache.replaceAll("dir", [view]);
  assert.equal(cache.get("a"), view);
  cache.upsert("cni", pod("a", {}, { status: { podIPs: [{ ip: "10.0.0.7" }] } }));
  assert.equal(cache.get("a"), view, "the best view has addresses: it is the merge");
});

Deno.test("PodCache's merge of two views is frozen and leaves both views as they were", () => {
  const cache = new PodCache();
  const api = normalisePod(pod("a", {}, { status: { phase: "Pending" } }));
  const cni = normalisePod(pod("a", {}, { status: { podIPs: [{ ip: "10.0.0.5" }] } }));
  cache.upsert("api", api);
  cache.upsert("cni", cni);
  const merged = cache.get("a")!;
  assert.ok(Object.isFrozen(merged) && Object.isFrozen(merged.status));
  assert.deepEqual(merged.status, { phase: "Pending", podIPs: [{ ip: "10.0.0.5" }] });
  assert.deepEqual(api.status, { phase: "Pending" });
  assert.deepEqual(cni.status, { podIPs: [{ ip: "10.0.0.5" }] });
});

Deno.test("PodCache.holderView() merges a refused pod's views where get() refuses it", () => {
  const cache = new PodCache();
  const huge = normalisePod({
    metadata: { name: "huge", namespace: "ns", uid: "h" },
    spec: {
      containers: [{ name: "c", livenessProbe: { httpGet: { port: 80, path: "x".repeat(5000) } } }],
    },
    status: { phase: "Running" },
  }, { maxBytes: 1024 });
  cache.upsert("api", huge);
  cache.upsert("cni", pod("h", {}, { status: { podIPs: [{ ip: "10.0.0.5" }] } }));
  assert.throws(() => cache.get("h"), /over the cap of 1024/);
  const view = cache.holderView("h")!;
  assert.equal(view.metadata.name, "huge", "who it is from the API's view");
  assert.equal(view.status?.phase, "Running");
  assert.deepEqual(view.status?.podIPs, [{ ip: "10.0.0.5" }], "its addresses from the CNI path");
  assert.deepEqual(view.spec.containers, [], "never its probes");
  assert.equal(cache.holderView("nobody"), undefined);
});
