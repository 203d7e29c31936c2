/**
 * A hostile tenant on the real API server: a ServiceAccount bound to the ordinary `edit`
 * ClusterRole in its own namespace cannot set the network annotations on a new pod (the chart's
 * policy), nor add, change or remove them later; the configured writer (the network plugin's
 * ServiceAccount) can; other annotations, pods without them and the probe host rule behave as
 * before; nor can an identity with bind rights set them through a Binding. That the tenant
 * cannot aim the API server's proxy either is in tenant_proxy_test.ts.
 */
import assert from "node:assert/strict";
import {
  CoreV1Api,
  PatchStrategy,
  RbacAuthorizationV1Api,
  setHeaderOptions,
  type V1Pod,
} from "@kubernetes/client-node";
import { startControlPlane } from "./fixture.ts";
import { applyObjects, helmTemplate } from "./helm.ts";
import { chartOnControlPlaneUnavailableReason, controlPlaneTestOptions } from "./tools.ts";
import { waitFor } from "../helpers/wait.ts";
import { account, aggregateClusterRole, TENANT_NS, verdict } from "./tenant_accounts.ts";

const policyTemplates = [
  "templates/validatingadmissionpolicy.yaml",
  "templates/validatingadmissionpolicybinding.yaml",
  "templates/validatingadmissionpolicy-network-annotations.yaml",
  "templates/validatingadmissionpolicybinding-network-annotations.yaml",
];

const unavailable = await chartOnControlPlaneUnavailableReason();
if (unavailable) console.warn(`Skipping network annotation policy tests: ${unavailable}`);

const WRITER = { namespace: "kube-system", name: "lace-cni" };
const NETWORK = "lace.io/network";
const NETWORK_ID = "lace.io/network-id";

function pod(name: string, annotations?: Record<string, string>): V1Pod {
  return {
    metadata: { name, annotations },
    spec: {
      nodeName: "node-a",
      containers: [{
        name: "app",
        image: "registry.invalid/app:1",
        readinessProbe: { httpGet: { port: 8080, path: "/healthz" } },
      }],
    },
  };
}

function assertRefused(result: { code: number; message: string }, key: RegExp): void {
  assert.equal(result.code, 403, `expected a refusal, got ${result.code} ${result.message}`);
  assert.match(result.message, /ValidatingAdmissionPolicy 'lace-network-annotations'/);
  assert.match(result.message, /only the network plugin may set, change or remove/);
  assert.match(result.message, key);
}

const mergePatch = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);

/** Merge-patches a pod's annotations (null removes one) as the given client. */
function patchAnnotations(core: CoreV1Api, name: string, annotations: Record<string, unknown>) {
  return core.patchNamespacedPod(
    { namespace: TENANT_NS, name, body: { metadata: { annotations } } },
    mergePatch,
  );
}

Deno.test({
  name: "only the configured writer can set, change or remove a pod's network annotations",
  ...controlPlaneTestOptions(unavailable),
}, async (t) => {
  await using cp = await startControlPlane();
  const admin = cp.adminConfig();
  const adminCore = admin.makeApiClient(CoreV1Api);
  const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
  await cp.createNamespace("lace-system");
  await cp.createNamespace(TENANT_NS);
  await applyObjects(admin, await helmTemplate({ showOnly: policyTemplates }), "lace-system");

  // The tenant: a ServiceAccount with `edit` in its own namespace, nothing more.
  const editRules = await aggregateClusterRole(rbac, "edit");
  assert.ok(editRules.some((r) => r.resources?.includes("pods") && r.verbs.includes("patch")));
  const tenant = await account(cp, { namespace: TENANT_NS, name: "tenant", role: "edit" }, {
    bindIn: TENANT_NS,
  });
  // The writer: the network plugin's ServiceAccount, which may create and patch any pod.
  const writer = await account(cp, { ...WRITER, role: "test-network-plugin" }, {
    rules: [{ apiGroups: [""], resources: ["pods"], verbs: ["get", "create", "patch"] }],
  });
  // A node-like identity that may write pod status (as a kubelet does), and nothing else.
  const statusUpdater = await account(cp, {
    namespace: TENANT_NS,
    name: "status-writer",
    role: "test-status-writer",
  }, {
    rules: [{ apiGroups: [""], resources: ["pods/status"], verbs: ["update", "patch"] }],
    bindIn: TENANT_NS,
  });

  // RBAC and the policy reach the API server through informers: wait until both apply, i.e.
  // the tenant may create pods but not one that names a network.
  const spoof = pod("spoof", { [NETWORK_ID]: "7" });
  const create = (core: CoreV1Api, body: V1Pod, dryRun?: string) =>
    core.createNamespacedPod({ namespace: TENANT_NS, body, dryRun });
  const first = await waitFor(async () => {
    const answer = await verdict(create(tenant, spoof, "All"));
    return answer.message.includes("lace-network-annotations") && answer;
  }, { timeout: 30_000, interval: 200, message: "the policy to refuse the tenant's spoof" });

  await t.step("the tenant cannot create a pod with a network id", () => {
    assertRefused(first, /lace\.io\/network-id/);
    assert.match(first.message, /system:serviceaccount:team-a:tenant/);
  });

  await t.step("the tenant cannot create a pod with a network name", async () => {
    assertRefused(
      await verdict(create(tenant, pod("n", { [NETWORK]: "blue" }), "All")),
      /lace\.io\/network(?!-)/,
    );
  });

  await t.step("a cluster admin who is not a writer cannot set them either", async () => {
    assertRefused(await verdict(create(adminCore, spoof, "All")), /lace\.io\/network-id/);
  });

  await t.step("the tenant creates pods without them, with other annotations too", async () => {
    assert.equal((await verdict(create(tenant, pod("plain")))).code, 200);
    const other = pod("other", { "example.com/owner": "team-a", "lace.io/other": "x" });
    assert.equal((await verdict(create(tenant, other))).code, 200);
  });

  await t.step("the writer creates a pod with both annotations", async () => {
    const body = pod("attached", { [NETWORK]: "blue", [NETWORK_ID]: "7" });
    assert.equal((await verdict(create(writer, body))).code, 200);
  });

  await t.step("the tenant cannot add them to its pod", async () => {
    assertRefused(await verdict(patchAnnotations(tenant, "plain", { [NETWORK_ID]: "9" })), /id/);
  });

  await t.step("the tenant cannot change them", async () => {
    const result = await verdict(patchAnnotations(tenant, "attached", { [NETWORK_ID]: "9" }));
    assertRefused(result, /lace\.io\/network-id/);
  });

  await t.step("the tenant cannot remove them", async () => {
    const result = await verdict(patchAnnotations(tenant, "attached", { [NETWORK]: null }));
    assertRefused(result, /lace\.io\/network(?!-)/);
  });

  await t.step("the tenant cannot change them by replacing the whole pod", async () => {
    const current = await tenant.readNamespacedPod({ namespace: TENANT_NS, name: "attached" });
    current.metadata!.annotations![NETWORK_ID] = "9";
    const result = await verdict(
      tenant.replaceNamespacedPod({ namespace: TENANT_NS, name: "attached", body: current }),
    );
    assertRefused(result, /lace\.io\/network-id/);
  });

  await t.step("the tenant changes other annotations of a pod that has them", async () => {
    const result = await verdict(patchAnnotations(tenant, "attached", { "example.com/x": "1" }));
    assert.equal(result.code, 200, result.message);
    const stored = await adminCore.readNamespacedPod({ namespace: TENANT_NS, name: "attached" });
    assert.equal(stored.metadata?.annotations?.[NETWORK_ID], "7");
  });

  await t.step("the writer adds, changes and removes them", async () => {
    const add = await verdict(
      patchAnnotations(writer, "plain", { [NETWORK]: "red", [NETWORK_ID]: "8" }),
    );
    assert.equal(add.code, 200, add.message);
    const change = await verdict(patchAnnotations(writer, "plain", { [NETWORK_ID]: "9" }));
    assert.equal(change.code, 200, change.message);
    const remove = await verdict(
      patchAnnotations(writer, "plain", { [NETWORK]: null, [NETWORK_ID]: null }),
    );
    assert.equal(remove.code, 200, remove.message);
  });

  await t.step("an identity that updates pod status cannot change them there", async () => {
    const current = await writer.readNamespacedPod({ namespace: TENANT_NS, name: "attached" });
    current.metadata!.annotations![NETWORK_ID] = "9";
    const result = await verdict(statusUpdater.replaceNamespacedPodStatus({
      namespace: TENANT_NS,
      name: "attached",
      body: current,
    }));
    assertRefused(result, /lace\.io\/network-id/);
  });

  await t.step("the probe host rule still rejects a probe that sets host", async () => {
    const body = pod("host");
    body.spec!.containers[0].readinessProbe = { tcpSocket: { host: "192.0.2.10", port: 80 } };
    const result = await verdict(create(tenant, body, "All"));
    assert.equal(result.code, 403);
    assert.match(result.message, /must not set host/);
  });
});

Deno.test({
  name: "an identity with bind rights cannot set the network annotations through a binding",
  ...controlPlaneTestOptions(unavailable),
}, async (t) => {
  await using cp = await startControlPlane();
  const admin = cp.adminConfig();
  const adminCore = admin.makeApiClient(CoreV1Api);
  await cp.createNamespace("lace-system");
  await cp.createNamespace(TENANT_NS);
  await applyObjects(admin, await helmTemplate({ showOnly: policyTemplates }), "lace-system");
  // A scheduler-like ServiceAccount: it may bind pods (both ways the API offers), nothing more.
  // The API server copies a Binding's annotations onto the pod it binds.
  const scheduler = await account(cp, {
    namespace: "kube-system",
    name: "other-scheduler",
    role: "test-scheduler",
  }, {
    rules: [
      { apiGroups: [""], resources: ["pods/binding", "bindings"], verbs: ["create"] },
      { apiGroups: [""], resources: ["pods"], verbs: ["get"] },
    ],
  });
  const unbound = (name: string): V1Pod => {
    const body = pod(name);
    delete body.spec!.nodeName;
    return body;
  };
  for (const name of ["bind-sub", "bind-top", "bind-plain", "bind-bare", "bind-top-bare"]) {
    await adminCore.createNamespacedPod({ namespace: TENANT_NS, body: unbound(name) });
  }
  const binding = (name: string, annotations?: Record<string, string>) => ({
    metadata: { name, annotations },
    target: { apiVersion: "v1", kind: "Node", name: "node-a" },
  });
  const bindSub = (name: string, annotations?: Record<string, string>) =>
    scheduler.createNamespacedPodBinding({
      namespace: TENANT_NS,
      name,
      body: binding(name, annotations),
    });
  // The policy reaches the API server through an informer: wait until it refuses a spoof.
  await waitFor(async () => {
    const answer = await verdict(adminCore.createNamespacedPod({
      namespace: TENANT_NS,
      body: pod("wait", { [NETWORK_ID]: "7" }),
      dryRun: "All",
    }));
    return answer.message.includes("lace-network-annotations");
  }, { timeout: 30_000, interval: 200, message: "the policy to refuse a spoof" });

  await t.step("a pods/binding that carries a network annotation is refused", async () => {
    assertRefused(await verdict(bindSub("bind-sub", { [NETWORK_ID]: "7" })), /network-id/);
    assertRefused(await verdict(bindSub("bind-sub", { [NETWORK]: "blue" })), /network(?!-)/);
    const stored = await adminCore.readNamespacedPod({ namespace: TENANT_NS, name: "bind-sub" });
    assert.equal(stored.spec?.nodeName, undefined, "the refused binding bound the pod");
    assert.equal(stored.metadata?.annotations?.[NETWORK_ID], undefined);
  });

  await t.step(
    "a Binding created in the namespace's bindings that carries one is refused",
    async () => {
      const result = await verdict(scheduler.createNamespacedBinding({
        namespace: TENANT_NS,
        body: binding("bind-top", { [NETWORK_ID]: "7" }),
      }));
      assertRefused(result, /network-id/);
    },
  );

  await t.step("a scheduler's ordinary binding, without annotations, binds the pod", async () => {
    // What every scheduler sends: the policy must never stand in its way.
    assert.equal((await verdict(bindSub("bind-bare"))).code, 200);
    const top = await verdict(scheduler.createNamespacedBinding({
      namespace: TENANT_NS,
      body: binding("bind-top-bare"),
    }));
    assert.equal(top.code, 200, top.message);
    for (const name of ["bind-bare", "bind-top-bare"]) {
      const stored = await adminCore.readNamespacedPod({ namespace: TENANT_NS, name });
      assert.equal(stored.spec?.nodeName, "node-a", name);
    }
  });

  await t.step("a binding without them, other annotations included, binds the pod", async () => {
    const result = await verdict(bindSub("bind-plain", { "example.com/scheduled-by": "other" }));
    assert.equal(result.code, 200, result.message);
    const stored = await adminCore.readNamespacedPod({ namespace: TENANT_NS, name: "bind-plain" });
    assert.equal(stored.spec?.nodeName, "node-a");
    assert.equal(stored.metadata?.annotations?.["example.com/scheduled-by"], "other");
  });
});
