import assert from "node:assert/strict";
import { CoreV1Api, KubeConfig, V1MicroTime, Watch } from "@kubernetes/client-node";
import { TestApiServer } from "./mod.ts";

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
