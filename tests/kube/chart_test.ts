/**
 * Lace's chart rendered by the real helm and created on the real API server: every object passes
 * server-side validation, and the chart's ServiceAccount gets what the agent needs and no more.
 */
import assert from "node:assert/strict";
import { ApiException, CoreV1Api, V1MicroTime } from "@kubernetes/client-node";
import {
  controlPlaneUnavailableReason,
  helmAvailable,
  Http1KubeConfig,
  startControlPlane,
} from "./fixture.ts";
import { applyObjects, helmTemplate } from "./helm.ts";

async function unavailableReason(): Promise<string | undefined> {
  const reason = await controlPlaneUnavailableReason();
  if (reason) return reason;
  if (!(await helmAvailable())) return "helm is not built; run scripts/build_k8s_tools.sh";
  return undefined;
}

const unavailable = await unavailableReason();
if (unavailable) console.warn(`Skipping chart tests: ${unavailable}`);

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
  name: "the chart's objects are accepted and its ServiceAccount can do what the agent does",
  ignore: unavailable !== undefined,
  sanitizeOps: false,
  sanitizeResources: false,
}, async (t) => {
  await using cp = await startControlPlane();
  await cp.createNamespace("lace-system");
  const objects = await helmTemplate({ namespace: "lace-system" });

  await t.step("every object rendered with default values is created", async () => {
    const created = await applyObjects(cp.adminConfig(), objects, "lace-system");
    assert.equal(created.length, objects.length);
    const kinds = new Set(created.map((o) => o.kind));
    for (const kind of ["ServiceAccount", "ClusterRole", "ClusterRoleBinding", "DaemonSet"]) {
      assert.ok(kinds.has(kind), `the chart renders a ${kind}`);
    }
  });

  await t.step(
    "the ServiceAccount's token lists pods, records events, deletes nothing",
    async () => {
      const account = objects.find((o) => o.kind === "ServiceAccount")?.metadata?.name;
      assert.ok(account, "the chart renders a ServiceAccount");
      const token = await cp.serviceAccountToken("lace-system", account);
      const config = new Http1KubeConfig();
      config.loadFromString(cp.kubeconfigForToken(token, account));
      const core = config.makeApiClient(CoreV1Api);
      await cp.createNamespace("apps");
      // RBAC bindings reach the authorizer through an informer: wait, with a deadline.
      const deadline = Date.now() + 10_000;
      const list = () => core.listPodForAllNamespaces({ fieldSelector: "spec.nodeName=node-a" });
      while ((await statusOf(list())) !== 200) {
        if (Date.now() > deadline) assert.fail("the chart's ServiceAccount cannot list pods");
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const event = core.createNamespacedEvent({
        namespace: "apps",
        body: {
          metadata: { generateName: "lace-" },
          involvedObject: { kind: "Pod", namespace: "apps", name: "web", apiVersion: "v1" },
          reason: "Test",
          message: "from the chart's ServiceAccount",
          type: "Normal",
          eventTime: new V1MicroTime(),
          action: "Test",
          reportingComponent: "lace",
          reportingInstance: "lace-node-a",
        },
      });
      assert.equal(await statusOf(event), 200);
      assert.equal(await statusOf(core.deleteNamespacedPod({ namespace: "apps", name: "x" })), 403);
      assert.equal(await statusOf(core.listNamespacedSecret({ namespace: "apps" })), 403);
    },
  );
});
