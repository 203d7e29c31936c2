/**
 * The whole chart, rendered by the real helm and created on the real API server (tests/kube):
 * the server accepts every object as `helm install` would send it, and its RBAC gives the agent's
 * ServiceAccount exactly the access the agent uses.
 */
import assert from "node:assert/strict";
import {
  AuthorizationV1Api,
  CoreV1Api,
  type V1DaemonSet,
  type V1ResourceAttributes,
} from "@kubernetes/client-node";
import { type ControlPlane, startControlPlane } from "./kube/fixture.ts";
import { applyObjects, helmTemplate } from "./kube/helm.ts";
import { chartOnControlPlaneUnavailableReason } from "./kube/tools.ts";
import { skipIf, skipName } from "./helpers/skip.ts";

const unavailable = await chartOnControlPlaneUnavailableReason();
const suffix = unavailable ? ` (skipped: ${unavailable})` : "";
const NAMESPACE = "lace-system";

/** Creates the chart rendered with `set` in NAMESPACE on `cp`; returns what was rendered and created. */
async function installChart(cp: ControlPlane, set: string[]) {
  await cp.createNamespace(NAMESPACE);
  const objects = await helmTemplate({ namespace: NAMESPACE, set });
  return { objects, created: await applyObjects(cp.adminConfig(), objects, NAMESPACE) };
}

/** Asks the API server whether ServiceAccount `name` of `namespace` may do what `attributes` say. */
function accessOf(cp: ControlPlane, name: string, namespace = NAMESPACE) {
  const authz = cp.adminConfig().makeApiClient(AuthorizationV1Api);
  return async (attributes: V1ResourceAttributes) =>
    (await authz.createSubjectAccessReview({
      body: {
        spec: {
          user: `system:serviceaccount:${namespace}:${name}`,
          groups: [
            "system:serviceaccounts",
            `system:serviceaccounts:${namespace}`,
            "system:authenticated",
          ],
          resourceAttributes: attributes,
        },
      },
    })).status?.allowed ?? false;
}

Deno.test({
  name: `the API server accepts every object of the rendered chart${suffix}`,
  ignore: skipIf(unavailable),
  async fn() {
    await using cp = await startControlPlane();
    await cp.createNamespace(NAMESPACE);
    for (const set of [[], ["privileged=true", "node.mountBpffs=true", "node.cni.enabled=false"]]) {
      const objects = await helmTemplate({
        namespace: NAMESPACE,
        set,
        release: `lace${set.length}`,
      });
      const created = await applyObjects(cp.adminConfig(), objects, NAMESPACE);
      assert.deepEqual(
        created.map((o) => o.kind).sort(),
        objects.map((o) => o.kind).sort(),
        "every rendered object was created",
      );
      // deno-lint-ignore no-explicit-any
      const ds = created.find((o) => o.kind === "DaemonSet") as any;
      const agent = ds.spec.template.spec.containers.find((c: { name: string }) =>
        c.name === "agent"
      );
      if (set.length === 0) {
        // The server kept the least-privilege context rather than dropping unknown fields.
        assert.deepEqual(agent.securityContext.capabilities.add, [
          "BPF",
          "NET_ADMIN",
          "PERFMON",
          "SYS_ADMIN",
        ]);
        assert.equal(agent.securityContext.appArmorProfile?.type, "Unconfined");
      } else {
        assert.equal(agent.securityContext.privileged, true);
      }
    }
  },
});

Deno.test({
  name: `the agent's ServiceAccount may do exactly what the agent does${suffix}`,
  ignore: skipIf(unavailable),
  async fn() {
    await using cp = await startControlPlane();
    await installChart(cp, ["admissionPolicy.enabled=false"]);
    const access = accessOf(cp, "lace");
    const allowed = (verb: string, resource: string, group = "") =>
      access({ verb, resource, group, namespace: resource === "nodes" ? undefined : "default" });
    const expected: [string, string, string, boolean][] = [
      ["get", "pods", "", true],
      ["list", "pods", "", true],
      ["watch", "pods", "", true],
      ["get", "nodes", "", true],
      ["create", "events", "", true],
      ["patch", "events", "", true],
      ["create", "pods", "", false],
      ["delete", "pods", "", false],
      ["update", "pods", "", false],
      ["list", "nodes", "", false],
      ["patch", "nodes", "", false],
      ["get", "secrets", "", false],
      ["list", "configmaps", "", false],
      ["create", "events", "events.k8s.io", false],
    ];
    for (const [verb, resource, group, want] of expected) {
      assert.equal(await allowed(verb, resource, group), want, `${verb} ${group}/${resource}`);
    }
    // The API server's addresses: the kubernetes Service and EndpointSlice in default and
    // kubeadm's cluster-info in kube-public, each by name. No list of EndpointSlices (it would
    // take any slice labelled for kubernetes), no v1 Endpoints (deprecated since 1.33).
    const slices = "discovery.k8s.io/endpointslices";
    const named: [string, string, string, string, boolean][] = [
      ["get", "services", "default", "kubernetes", true],
      ["get", slices, "default", "kubernetes", true],
      ["list", slices, "default", "", false],
      ["get", slices, "default", "other", false],
      ["watch", slices, "default", "kubernetes", false],
      ["get", slices, "tenant", "kubernetes", false],
      ["get", "services", "default", "other", false],
      ["get", "endpoints", "default", "kubernetes", false],
      ["watch", slices, "default", "", false],
      ["create", slices, "default", "", false],
      ["update", slices, "default", "kubernetes", false],
      ["list", slices, "tenant", "", false],
      ["list", slices, "", "", false],
      ["list", "services", "default", "", false],
      ["watch", "endpoints", "default", "", false],
      ["update", "services", "default", "kubernetes", false],
      ["get", "services", "tenant", "kubernetes", false],
      ["get", "configmaps", "kube-public", "cluster-info", true],
      ["get", "configmaps", "kube-public", "other", false],
      ["list", "configmaps", "kube-public", "", false],
      ["get", "configmaps", "default", "cluster-info", false],
    ];
    for (const [verb, what, namespace, name, want] of named) {
      const [group, resource] = what.includes("/") ? what.split("/") : ["", what];
      assert.equal(
        await access({
          verb,
          group,
          resource,
          ...(namespace ? { namespace } : {}),
          ...(name ? { name } : {}),
        }),
        want,
        `${verb} ${what} ${namespace || "(all namespaces)"}/${name}`,
      );
    }
  },
});

Deno.test({
  name:
    `the netcheck runner's ServiceAccount may do what netcheck does in its namespace, nothing in the agent's${suffix}`,
  ignore: skipIf(unavailable),
  async fn() {
    await using cp = await startControlPlane();
    const { objects, created } = await installChart(cp, [
      "admissionPolicy.enabled=false",
      "netcheck.enabled=true",
    ]);
    assert.deepEqual(created.map((o) => o.kind).sort(), objects.map((o) => o.kind).sort());
    const access = accessOf(cp, "lace-netcheck");
    const allowed = (
      verb: string,
      resource: string,
      group: string,
      namespace: string | undefined,
      name?: string,
      subresource?: string,
    ) => access({ verb, resource, group, namespace, name, subresource });
    const own = "lace-netcheck";
    const expected: [string, string, string, string | undefined, string?, string?, boolean?][] = [
      ["create", "daemonsets", "apps", own],
      ["delete", "daemonsets", "apps", own],
      ["list", "pods", "", own],
      ["create", "pods", "", own, undefined, "exec"],
      ["get", "pods", "", own, undefined, "exec"],
      ["get", "configmaps", "", own, "lace-netcheck"],
      ["update", "leases", "coordination.k8s.io", own],
      ["get", "namespaces", "", undefined, own],
    ];
    const refused: typeof expected = [
      ["create", "pods", "", NAMESPACE, undefined, "exec"],
      ["delete", "daemonsets", "apps", NAMESPACE],
      ["list", "pods", "", NAMESPACE],
      ["create", "pods", "", own],
      ["get", "secrets", "", own],
      ["get", "configmaps", "", own, "other"],
      ["get", "namespaces", "", undefined, NAMESPACE],
      ["create", "namespaces", "", undefined],
      ["list", "daemonsets", "apps", undefined],
    ];
    for (const [want, cases] of [[true, expected], [false, refused]] as const) {
      for (const [verb, resource, group, ns, name, sub] of cases) {
        assert.equal(
          await allowed(verb, resource, group, ns, name, sub),
          want,
          `${verb} ${group}/${resource}${sub ? `/${sub}` : ""} ${ns ?? "(cluster)"} ${name ?? ""}`,
        );
      }
    }
  },
});

Deno.test({
  name: skipName(
    "the namespace the chart creates admits the agent's pod at the privileged Pod Security level, which a baseline namespace refuses",
    unavailable,
  ),
  ignore: skipIf(unavailable),
  async fn() {
    await using cp = await startControlPlane();
    // The release in one namespace, the agent in the one the chart creates (namespaceOverride).
    const objects = await helmTemplate({
      namespace: "releases",
      release: "rel",
      set: [
        "namespaceOverride=agents",
        "createNamespace=true",
        "fullnameOverride=fx",
        "admissionPolicy.enabled=false",
      ],
    });
    const created = await applyObjects(cp.adminConfig(), objects, "releases");
    assert.deepEqual(created.map((o) => o.kind).sort(), objects.map((o) => o.kind).sort());
    assert.equal(created[0].kind, "Namespace", "helm orders the namespace first");
    // Its RBAC names the ServiceAccount where it is.
    const access = accessOf(cp, "fx", "agents");
    assert.equal(await access({ verb: "watch", resource: "pods" }), true);
    assert.equal(
      await access({
        verb: "get",
        group: "apps",
        resource: "daemonsets",
        namespace: "agents",
        name: "fx",
      }),
      true,
    );
    // The DaemonSet's pod, as its controller would create it, checked by Pod Security admission.
    const ds = created.find((o) => o.kind === "DaemonSet") as V1DaemonSet;
    const core = cp.adminConfig().makeApiClient(CoreV1Api);
    const agentPod = (namespace: string) => ({
      metadata: { name: "agent", namespace, labels: ds.spec!.template.metadata!.labels },
      spec: ds.spec!.template.spec!,
    });
    await core.createNamespacedPod({ namespace: "agents", body: agentPod("agents") });
    await cp.createNamespace("tenants");
    await core.patchNamespace({
      name: "tenants",
      body: [{
        op: "add",
        path: "/metadata/labels/pod-security.kubernetes.io~1enforce",
        value: "baseline",
      }],
    });
    await core.createNamespacedServiceAccount({
      namespace: "tenants",
      body: { metadata: { name: "fx" } },
    });
    const refused = await core.createNamespacedPod({
      namespace: "tenants",
      body: agentPod("tenants"),
    }).then(() => undefined, (e) => e as { code?: number; body?: string });
    assert.equal(refused?.code, 403, "the baseline namespace admitted the agent's pod");
    const message = JSON.parse(String(refused?.body)).message;
    assert.match(message, /violates PodSecurity "baseline:latest"/, message);
    assert.match(message, /host namespaces \(hostNetwork=true, hostPID=true\)/, message);
  },
});

Deno.test({
  name: skipName(
    "helm test's ServiceAccount may get the agent's DaemonSet and list pods in its namespace, and nothing else",
    unavailable,
  ),
  ignore: skipIf(unavailable),
  async fn() {
    await using cp = await startControlPlane();
    await installChart(cp, ["admissionPolicy.enabled=false"]);
    const access = accessOf(cp, "lace-test");
    const cases: [V1ResourceAttributes, boolean][] = [
      [
        { verb: "get", group: "apps", resource: "daemonsets", namespace: NAMESPACE, name: "lace" },
        true,
      ],
      [{ verb: "list", resource: "pods", namespace: NAMESPACE }, true],
      [
        { verb: "get", group: "apps", resource: "daemonsets", namespace: NAMESPACE, name: "x" },
        false,
      ],
      [{ verb: "list", group: "apps", resource: "daemonsets", namespace: NAMESPACE }, false],
      [{ verb: "watch", resource: "pods", namespace: NAMESPACE }, false],
      [{ verb: "list", resource: "pods", namespace: "default" }, false],
      [{ verb: "list", resource: "pods" }, false],
      [{ verb: "get", resource: "pods", namespace: NAMESPACE, subresource: "proxy" }, false],
      [{ verb: "create", resource: "pods", namespace: NAMESPACE, subresource: "exec" }, false],
      [{ verb: "get", resource: "nodes", subresource: "proxy" }, false],
      [{ verb: "list", resource: "secrets", namespace: NAMESPACE }, false],
      [{ verb: "delete", resource: "pods", namespace: NAMESPACE }, false],
    ];
    for (const [attributes, want] of cases) {
      assert.equal(await access(attributes), want, JSON.stringify(attributes));
    }
  },
});
