/** EventRecorder through the real client-node against the test API server's Event validation. */
import assert from "node:assert/strict";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { EventRecorder } from "../lib/kube/events.ts";
import { nodeObjectRef, podObjectRef } from "../lib/kube/event_sink.ts";
import { normalisePod } from "../lib/pods/pod.ts";
import { TestApiServer } from "./api_server/mod.ts";

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
  const events = new EventRecorder({ api: core, nodeName: "node-a" });
  const ref = podObjectRef(normalisePod(created).metadata);
  events.warn(ref, "ProbeHostIgnored", "probe host 10.9.9.9 is not one of the pod's IPs");
  events.warn(ref, "ProbeHostIgnored", "probe host 10.9.9.9 is not one of the pod's IPs");
  events.warn(nodeObjectRef("node-a"), "KubeletCgroupMismatch", "kubelet moved");
  await events.flush();
  assert.deepEqual(events.stats, {
    created: 2,
    aggregated: 1,
    rateLimited: 0,
    dropped: 0,
    failed: 0,
  });
  const list = await core.listEventForAllNamespaces();
  const byReason = new Map(list.items.map((e) => [e.reason, e]));
  assert.equal(byReason.get("ProbeHostIgnored")?.count, 2);
  assert.equal(byReason.get("ProbeHostIgnored")?.involvedObject.uid, created.metadata!.uid);
  assert.equal(byReason.get("KubeletCgroupMismatch")?.metadata.namespace, "default");
});
