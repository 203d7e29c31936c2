/**
 * The chart's optional `lace netcheck --watch` Deployment (netcheck.enabled), rendered by the real
 * helm: off by default, a non-root runner without capabilities, and RBAC that reaches nothing but
 * its own namespace (never the agent's, where exec would reach the privileged agent pods).
 * helm comes from scripts/install_helm.sh; without it these tests are skipped.
 */
import assert from "node:assert/strict";
import { helmTest, type Manifest, only, refusal, render } from "./helpers/helm.ts";

const ON = ["netcheck.enabled=true"];
const NAME = "lace-netcheck";

const netcheckObjects = (manifests: Manifest[]) =>
  manifests.filter((m) =>
    m.metadata?.name === NAME || m.metadata?.namespace === "lace-netcheck" ||
    (m.kind === "Namespace" && m.metadata?.name === "lace-netcheck")
  );

helmTest("the netcheck Deployment and its RBAC are not rendered by default", async (h) => {
  assert.deepEqual(netcheckObjects(await render(h)), []);
});

helmTest(
  "netcheck.enabled runs lace netcheck --watch as one non-root runner without capabilities",
  async (h) => {
    const manifests = await render(h, [...ON, "netcheck.extraArgs={--mtu,--peers=4}"]);
    const deployment = only(manifests, "Deployment", NAME);
    assert.equal(deployment.metadata.namespace, "lace-system");
    assert.equal(deployment.spec.replicas, 1);
    assert.equal(deployment.spec.strategy.type, "Recreate");
    // The agent's DaemonSet must not select the runner's pod.
    const agentSelector = only(manifests, "DaemonSet").spec.selector.matchLabels;
    const podLabels = deployment.spec.template.metadata.labels;
    assert.ok(
      Object.entries(agentSelector).some(([k, v]) => podLabels[k] !== v),
      JSON.stringify(podLabels),
    );
    assert.deepEqual(deployment.spec.selector.matchLabels, podLabels);
    const pod = deployment.spec.template.spec;
    assert.equal(pod.serviceAccountName, NAME);
    assert.equal(pod.hostNetwork, undefined);
    assert.equal(pod.securityContext.runAsNonRoot, true);
    assert.equal(pod.securityContext.seccompProfile.type, "RuntimeDefault");
    assert.equal(pod.terminationGracePeriodSeconds, 60);
    const [container] = pod.containers;
    assert.deepEqual(container.args, [
      "netcheck",
      "--watch",
      "--interval=5m",
      "--namespace=lace-netcheck",
      "--metrics-address=127.0.0.1:9469",
      "--owner-configmap=lace-netcheck",
      "--mtu",
      "--peers=4",
    ]);
    assert.deepEqual(container.securityContext, {
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ["ALL"] },
    });
    const ns = only(manifests, "Namespace", "lace-netcheck");
    assert.equal(ns.metadata.labels["pod-security.kubernetes.io/enforce"], "baseline");
  },
);

helmTest(
  "the netcheck runner's RBAC is its own namespace's Role and get on that namespace only",
  async (h) => {
    const manifests = await render(h, ON);
    const role = only(manifests, "Role", NAME);
    assert.equal(role.metadata.namespace, "lace-netcheck");
    assert.deepEqual(role.rules, [
      {
        apiGroups: ["apps"],
        resources: ["daemonsets"],
        verbs: ["create", "get", "patch", "delete"],
      },
      { apiGroups: [""], resources: ["pods"], verbs: ["list"] },
      { apiGroups: [""], resources: ["pods/exec"], verbs: ["get", "create"] },
      {
        apiGroups: ["coordination.k8s.io"],
        resources: ["leases"],
        verbs: ["get", "create", "update", "delete"],
      },
      { apiGroups: [""], resources: ["configmaps"], resourceNames: [NAME], verbs: ["get"] },
    ]);
    // The owner of the runner's DaemonSets and Lease, in their namespace.
    assert.equal(only(manifests, "ConfigMap", NAME).metadata.namespace, "lace-netcheck");
    const binding = only(manifests, "RoleBinding", NAME);
    assert.equal(binding.metadata.namespace, "lace-netcheck");
    assert.deepEqual(binding.subjects, [
      { kind: "ServiceAccount", name: NAME, namespace: "lace-system" },
    ]);
    assert.deepEqual(only(manifests, "ClusterRole", NAME).rules, [
      {
        apiGroups: [""],
        resources: ["namespaces"],
        resourceNames: ["lace-netcheck"],
        verbs: ["get"],
      },
    ]);
    // Nothing granted to it in the agent's namespace.
    for (
      const m of manifests.filter((m) =>
        m.kind === "RoleBinding" || m.kind === "ClusterRoleBinding"
      )
    ) {
      if (m.metadata.name === NAME) continue;
      assert.ok(!m.subjects.some((s: Manifest) => s.name === NAME), m.metadata.name);
    }
  },
);

helmTest(
  "netcheck in the agent's namespace, or extra flags the chart sets, are refused",
  async (h) => {
    let stderr = await refusal(h, [...ON, "netcheck.namespace=lace-system"]);
    assert.match(stderr, /netcheck.namespace must not be the agent's namespace "lace-system"/);
    // The agent's namespace is namespaceOverride's when it is set.
    stderr = await refusal(h, [...ON, "namespaceOverride=agents", "netcheck.namespace=agents"]);
    assert.match(stderr, /netcheck.namespace must not be the agent's namespace "agents"/);
    stderr = await refusal(h, [...ON, "netcheck.extraArgs={--namespace=kube-system}"]);
    assert.match(stderr, /netcheck.extraArgs must not set "--namespace=kube-system"/);
    stderr = await refusal(h, [...ON, "netcheck.extraArgs={--owner-configmap=other}"]);
    assert.match(stderr, /netcheck.extraArgs must not set "--owner-configmap=other"/);
    stderr = await refusal(h, [...ON, "netcheck.extraArgs={mtu}"]);
    assert.match(stderr, /schema/);
  },
);

helmTest(
  "the netcheck runner's DaemonSets are confined by a Deny policy bound to its ServiceAccount alone, even with the agent's policies off",
  async (h) => {
    const manifests = await render(h, [...ON, "admissionPolicy.enabled=false"]);
    const policy = only(manifests, "ValidatingAdmissionPolicy", NAME);
    assert.deepEqual(policy.spec.matchConstraints.resourceRules, [{
      apiGroups: ["apps"],
      apiVersions: ["v1"],
      operations: ["CREATE", "UPDATE"],
      resources: ["daemonsets"],
    }]);
    assert.equal(policy.spec.failurePolicy, "Fail");
    assert.deepEqual(policy.spec.matchConditions, [{
      name: "the-netcheck-runner",
      expression: `request.userInfo.username == "system:serviceaccount:lace-system:${NAME}"`,
    }]);
    const binding = only(manifests, "ValidatingAdmissionPolicyBinding", NAME);
    assert.equal(binding.spec.policyName, NAME);
    assert.deepEqual(binding.spec.validationActions, ["Deny"]);
    assert.equal(binding.spec.matchResources, undefined, "every namespace");
    // The runner's ServiceAccount lives in the agent's namespace, namespaceOverride's when set.
    const moved = await render(h, [...ON, "namespaceOverride=agents"]);
    assert.match(
      only(moved, "ValidatingAdmissionPolicy", NAME).spec.matchConditions[0].expression,
      /"system:serviceaccount:agents:lace-netcheck"$/,
    );
    const off = await render(h, []);
    assert.ok(
      !off.some((m) => m.kind.startsWith("ValidatingAdmissionPolicy") && m.metadata.name === NAME),
    );
  },
);
