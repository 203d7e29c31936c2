/**
 * The real control plane behaves as the agent relies on, seen through the real client
 * (@kubernetes/client-node): node-scoped lists and watches, the status subresource, Event
 * timestamps, TokenRequest + RBAC, and data surviving an API server restart.
 */
import assert from "node:assert/strict";
import {
  ApiException,
  CoreV1Api,
  EventsV1Api,
  type KubeConfig,
  PatchStrategy,
  RbacAuthorizationV1Api,
  setHeaderOptions,
  V1MicroTime,
  type V1Pod,
  Watch,
} from "@kubernetes/client-node";
import { startControlPlane } from "./fixture.ts";
import { controlPlaneTestOptions, controlPlaneUnavailableReason } from "./tools.ts";
import { waitFor } from "../helpers/wait.ts";
import { verdict } from "./tenant_accounts.ts";

const unavailable = await controlPlaneUnavailableReason();
if (unavailable) console.warn(`Skipping control-plane tests: ${unavailable}`);

function podOn(name: string, nodeName: string): V1Pod {
  return {
    metadata: { name, annotations: { "lace.example/test": "yes" } },
    spec: {
      nodeName,
      containers: [{ name: "app", image: "registry.invalid/app:1" }],
    },
  };
}

/** Status as a kubelet would write it after starting the pod. */
async function setRunning(config: KubeConfig, namespace: string, name: string, ip: string) {
  const core = config.makeApiClient(CoreV1Api);
  return await core.patchNamespacedPodStatus(
    {
      namespace,
      name,
      body: { status: { phase: "Running", podIP: ip, podIPs: [{ ip }] } },
    },
    setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
  );
}

async function statusOf(promise: Promise<unknown>): Promise<number> {
  try {
    await promise;
    return 200;
  } catch (error) {
    if (error instanceof ApiException) return error.code;
    throw error;
  }
}

Deno.test({
  name: "the real API server serves what the agent relies on",
  ...controlPlaneTestOptions(unavailable),
}, async (t) => {
  await using cp = await startControlPlane();
  const admin = cp.adminConfig();
  const core = admin.makeApiClient(CoreV1Api);

  await t.step("a pod's podIPs set through the status subresource are stored", async () => {
    await cp.createNamespace("status");
    await core.createNamespacedPod({ namespace: "status", body: podOn("web", "node-a") });
    await setRunning(admin, "status", "web", "10.20.0.5");
    const pod = await core.readNamespacedPod({ namespace: "status", name: "web" });
    assert.deepEqual(pod.status?.podIPs?.map((p) => p.ip), ["10.20.0.5"]);
    assert.equal(pod.status?.phase, "Running");
    assert.equal(pod.spec?.nodeName, "node-a");
  });

  await t.step("a spec.nodeName field selector lists only that node's pods", async () => {
    await cp.createNamespace("select");
    await core.createNamespacedPod({ namespace: "select", body: podOn("a1", "node-a") });
    await core.createNamespacedPod({ namespace: "select", body: podOn("b1", "node-b") });
    const list = await core.listPodForAllNamespaces({ fieldSelector: "spec.nodeName=node-b" });
    assert.deepEqual(list.items.map((p) => p.metadata?.name), ["b1"]);
  });

  await t.step("a watch with a spec.nodeName selector sees add, status and delete", async () => {
    await cp.createNamespace("watch");
    const seen: Array<{ type: string; pod: V1Pod }> = [];
    let ended: unknown = "still running";
    const controller = await new Watch(admin).watch(
      "/api/v1/pods",
      { fieldSelector: "spec.nodeName=node-w" },
      (type, pod) => seen.push({ type, pod }),
      (error) => (ended = error),
    );
    try {
      await core.createNamespacedPod({ namespace: "watch", body: podOn("other", "node-x") });
      await core.createNamespacedPod({ namespace: "watch", body: podOn("mine", "node-w") });
      await waitFor(() => seen.find((e) => e.type === "ADDED"), {
        timeout: 10_000,
        message: "ADDED",
      });
      await setRunning(admin, "watch", "mine", "10.20.0.9");
      await waitFor(
        () =>
          seen.find((e) => e.type === "MODIFIED" && e.pod.status?.podIPs?.[0]?.ip === "10.20.0.9"),
        { timeout: 10_000, message: "MODIFIED with podIPs" },
      );
      await core.deleteNamespacedPod({ namespace: "watch", name: "mine", gracePeriodSeconds: 0 });
      await waitFor(() => seen.find((e) => e.type === "DELETED"), {
        timeout: 10_000,
        message: "DELETED",
      });
      assert.ok(seen.every((e) => e.pod.metadata?.name === "mine"), "only node-w's pod is seen");
      assert.equal(ended, "still running");
    } finally {
      controller.abort();
    }
  });

  await t.step("deleting a pod bound to a node waits for a kubelet unless grace is 0", async () => {
    await cp.createNamespace("delete");
    await core.createNamespacedPod({ namespace: "delete", body: podOn("slow", "node-a") });
    await core.deleteNamespacedPod({ namespace: "delete", name: "slow" });
    const pending = await core.readNamespacedPod({ namespace: "delete", name: "slow" });
    assert.ok(pending.metadata?.deletionTimestamp, "graceful deletion leaves the pod with a stamp");
    await core.deleteNamespacedPod({ namespace: "delete", name: "slow", gracePeriodSeconds: 0 });
    assert.equal(
      await statusOf(core.readNamespacedPod({ namespace: "delete", name: "slow" })),
      404,
    );
  });

  const coreEvent = (name: string, eventTime: Date) => ({
    metadata: { name },
    involvedObject: { kind: "Pod", namespace: "events", name: "web", apiVersion: "v1" },
    reason: "ProbeTargetsAdded",
    message: "1 probe target",
    type: "Normal",
    eventTime,
    action: "Reconcile",
    reportingComponent: "lace",
    reportingInstance: "lace-node-a",
  });

  await t.step("a core/v1 Event with a V1MicroTime eventTime is accepted", async () => {
    await cp.createNamespace("events");
    const body = coreEvent("micro", new V1MicroTime());
    const created = await core.createNamespacedEvent({ namespace: "events", body });
    // client-node does not turn MicroTime back into a Date: the stored value comes back as the
    // server's string, with microseconds.
    assert.match(String(created.eventTime), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    assert.equal(created.reportingComponent, "lace");
  });

  await t.step("a core/v1 Event with a plain Date eventTime is rejected as 400", async () => {
    // Date#toISOString has millisecond precision (".123Z"); the server parses MicroTime with
    // the fixed layout "2006-01-02T15:04:05.000000Z07:00" and refuses the body.
    const body = coreEvent("plain-date", new Date());
    const refused = await verdict(core.createNamespacedEvent({ namespace: "events", body }));
    assert.equal(refused.code, 400, refused.message);
    assert.match(refused.message, /cannot parse \\?"\.\d{3}Z\\?" as \\?"\.000000\\?"/);
  });

  await t.step("an events.k8s.io/v1 Event with a V1MicroTime eventTime is accepted", async () => {
    const events = admin.makeApiClient(EventsV1Api);
    const created = await events.createNamespacedEvent({
      namespace: "events",
      body: {
        metadata: { name: "events-v1" },
        eventTime: new V1MicroTime(),
        regarding: { kind: "Pod", namespace: "events", name: "web", apiVersion: "v1" },
        reason: "ProbeTargetsAdded",
        note: "1 probe target",
        type: "Normal",
        action: "Reconcile",
        reportingController: "lace.example/agent",
        reportingInstance: "lace-node-a",
      },
    });
    assert.equal(created.reportingController, "lace.example/agent");
  });

  await t.step("a TokenRequest token authenticates as its ServiceAccount under RBAC", async () => {
    await cp.createNamespace("rbac");
    await core.createNamespacedServiceAccount({
      namespace: "rbac",
      body: { metadata: { name: "agent" } },
    });
    const token = await cp.serviceAccountToken("rbac", "agent");
    const asAgent = cp.adminConfig();
    asAgent.loadFromString(cp.kubeconfigForToken(token));
    const agentCore = asAgent.makeApiClient(CoreV1Api);
    // Forbidden, not unauthenticated: the server names the ServiceAccount the token stands for.
    const before = await verdict(agentCore.listPodForAllNamespaces());
    assert.equal(before.code, 403, before.message);
    assert.match(
      before.message,
      /User \\?"system:serviceaccount:rbac:agent\\?" cannot list resource \\?"pods\\?"/,
    );

    const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
    await rbac.createClusterRole({
      body: {
        metadata: { name: "test-pod-reader" },
        rules: [{ apiGroups: [""], resources: ["pods"], verbs: ["get", "list", "watch"] }],
      },
    });
    await rbac.createClusterRoleBinding({
      body: {
        metadata: { name: "test-pod-reader" },
        roleRef: {
          apiGroup: "rbac.authorization.k8s.io",
          kind: "ClusterRole",
          name: "test-pod-reader",
        },
        subjects: [{ kind: "ServiceAccount", namespace: "rbac", name: "agent" }],
      },
    });
    // RBAC changes reach the authorizer through an informer: wait, with a deadline.
    await waitFor(async () => await statusOf(agentCore.listPodForAllNamespaces()) === 200, {
      timeout: 10_000,
      interval: 100,
      message: "the agent to be allowed to list pods",
    });
    const deleting = await verdict(agentCore.deleteNamespacedPod({ namespace: "rbac", name: "x" }));
    assert.equal(deleting.code, 403, deleting.message);
    assert.match(deleting.message, /cannot delete resource \\?"pods\\?"/);
  });
});

Deno.test({
  name: "stopping and restarting the API server keeps its URL and its data",
  ...controlPlaneTestOptions(unavailable),
}, async () => {
  await using cp = await startControlPlane();
  const core = cp.adminConfig().makeApiClient(CoreV1Api);
  await cp.createNamespace("keep");
  await core.createNamespacedPod({ namespace: "keep", body: podOn("survivor", "node-a") });

  await cp.stopApiServer();
  assert.equal(cp.apiServerRunning, false);
  await assert.rejects(core.readNamespacedPod({ namespace: "keep", name: "survivor" }));

  await cp.startApiServer();
  assert.equal(cp.apiServerRunning, true);
  const after = await cp.adminConfig().makeApiClient(CoreV1Api)
    .readNamespacedPod({ namespace: "keep", name: "survivor" });
  assert.equal(after.spec?.nodeName, "node-a");
  assert.equal(new URL(cp.url).hostname, "127.0.0.1");
});
