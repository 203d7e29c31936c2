/**
 * A hostile tenant on the real API server cannot aim the API server's proxy at an address of its
 * choosing: with the ordinary `edit` ClusterRole in its own namespace it may proxy to its own pods
 * and services only, and cannot write Endpoints or EndpointSlices. It matters where the API
 * server shares the kubelet's cgroup (k3s servers, MicroK8s: docs/deploy.md), whose connections
 * to probe targets are tagged.
 */
import assert from "node:assert/strict";
import { AuthorizationV1Api, RbacAuthorizationV1Api } from "@kubernetes/client-node";
import { startControlPlane } from "./fixture.ts";
import { controlPlaneTestOptions, controlPlaneUnavailableReason } from "./tools.ts";
import { waitFor } from "../helpers/wait.ts";
import { account, aggregateClusterRole, TENANT_NS, verdict } from "./tenant_accounts.ts";

const unavailable = await controlPlaneUnavailableReason();
if (unavailable) console.warn(`Skipping tenant proxy tests: ${unavailable}`);

Deno.test({
  name: "a tenant with edit cannot aim the API server's proxy at an address of its choosing",
  ...controlPlaneTestOptions(unavailable),
}, async (t) => {
  await using cp = await startControlPlane();
  const rbac = cp.adminConfig().makeApiClient(RbacAuthorizationV1Api);
  await cp.createNamespace(TENANT_NS);
  await aggregateClusterRole(rbac, "edit");
  const tenant = await account(cp, { namespace: TENANT_NS, name: "tenant", role: "edit" }, {
    bindIn: TENANT_NS,
  });
  const authz = cp.adminConfig().makeApiClient(AuthorizationV1Api);
  const may = async (verb: string, resource: string, group = "", subresource?: string) =>
    (await authz.createSubjectAccessReview({
      body: {
        spec: {
          user: `system:serviceaccount:${TENANT_NS}:tenant`,
          groups: ["system:serviceaccounts", `system:serviceaccounts:${TENANT_NS}`],
          resourceAttributes: { verb, resource, group, subresource, namespace: TENANT_NS },
        },
      },
    })).status?.allowed === true;
  // RBAC reaches the authorizer through an informer: wait until the binding applies.
  await waitFor(() => may("create", "pods"), { timeout: 10_000, message: "the edit binding" });

  await t.step("it may proxy to its own pods and services (edit grants that)", async () => {
    assert.equal(await may("get", "pods", "", "proxy"), true);
    assert.equal(await may("get", "services", "", "proxy"), true);
  });

  await t.step("it cannot write Endpoints or EndpointSlices", async () => {
    assert.equal(await may("create", "endpoints"), false);
    assert.equal(await may("update", "endpoints"), false);
    assert.equal(await may("create", "endpointslices", "discovery.k8s.io"), false);
    const result = await verdict(tenant.createNamespacedEndpoints({
      namespace: TENANT_NS,
      body: {
        metadata: { name: "aim" },
        subsets: [{ addresses: [{ ip: "10.244.1.10" }], ports: [{ port: 8080 }] }],
      },
    }));
    assert.equal(result.code, 403, result.message);
    assert.match(result.message, /cannot create resource \\?"endpoints\\?"/);
  });
});
