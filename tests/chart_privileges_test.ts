/**
 * What the Helm chart grants the agent, rendered by the real helm: its capabilities and privilege,
 * the host namespaces, its RBAC (cluster-wide and on its own DaemonSet), and where it listens.
 * helm comes from scripts/install_helm.sh; without it these tests are skipped.
 */
import assert from "node:assert/strict";
import {
  agent,
  envOf,
  helmTest,
  type Manifest,
  mountOf,
  only,
  podSpec,
  render,
} from "./helpers/helm.ts";

const AGENT_CAPABILITIES = ["BPF", "NET_ADMIN", "PERFMON", "SYS_ADMIN"];

helmTest("the agent gets exactly its capabilities and is not privileged", async (h) => {
  const security = agent(await render(h)).securityContext;
  assert.equal(security.privileged, false);
  assert.deepEqual(security.capabilities.drop, ["ALL"]);
  assert.deepEqual([...security.capabilities.add].sort(), AGENT_CAPABILITIES);
  assert.equal(security.runAsUser, 0);
  assert.equal(security.readOnlyRootFilesystem, true);
  // With SYS_ADMIN, no_new_privs is no boundary; the chart does not pretend it is.
  assert.equal(security.allowPrivilegeEscalation, true);
});

helmTest("without SYS_ADMIN the agent runs with no_new_privs", async (h) => {
  const security = agent(await render(h, ["capabilities={BPF,NET_ADMIN,PERFMON}"])).securityContext;
  assert.deepEqual([...security.capabilities.add].sort(), ["BPF", "NET_ADMIN", "PERFMON"]);
  assert.equal(security.allowPrivilegeEscalation, false);
});

helmTest("privileged=true runs the agent privileged with bidirectional bpffs", async (h) => {
  const manifests = await render(h, ["privileged=true"]);
  const security = agent(manifests).securityContext;
  assert.equal(security.privileged, true);
  assert.equal(security.capabilities, undefined);
  assert.equal(mountOf(manifests, "/sys/fs/bpf").mount.mountPropagation, "Bidirectional");
});

helmTest("the agent runs in the host network and PID namespace on every node", async (h) => {
  const spec = podSpec(await render(h));
  assert.equal(spec.hostNetwork, true);
  assert.equal(spec.hostPID, true);
  assert.equal(spec.priorityClassName, "system-node-critical");
  assert.deepEqual(spec.tolerations, [{ operator: "Exists" }]);
  assert.equal(spec.serviceAccountName, "lace");
});

helmTest(
  "the agent learns its node name, serves metrics on the node IP and health to its probes on loopback",
  async (h) => {
    const manifests = await render(h);
    const c = agent(manifests);
    assert.deepEqual(envOf(c, "NODE_NAME"), { fieldRef: { fieldPath: "spec.nodeName" } });
    assert.deepEqual(envOf(c, "HOST_IP"), { fieldRef: { fieldPath: "status.hostIP" } });
    assert.equal(envOf(c, "LACE_METRICS_ADDR"), "$(HOST_IP):9808");
    // Kubernetes expands $(HOST_IP) only from variables defined earlier in the list.
    const names = c.env.map((e: Manifest) => e.name);
    assert.ok(names.indexOf("HOST_IP") < names.indexOf("LACE_METRICS_ADDR"));
    assert.deepEqual(c.ports, [{ name: "metrics", containerPort: 9808, protocol: "TCP" }]);
    // The kubelet probes the agent where no pod can reach: a loopback listener of health alone.
    assert.equal(envOf(c, "LACE_HEALTH_ADDR"), "127.0.0.1:9809");
    assert.deepEqual(c.livenessProbe.httpGet, { host: "127.0.0.1", path: "/healthz", port: 9809 });
    assert.deepEqual(c.readinessProbe.httpGet, { host: "127.0.0.1", path: "/readyz", port: 9809 });
    assert.deepEqual(c.startupProbe.httpGet, { host: "127.0.0.1", path: "/healthz", port: 9809 });

    const moved = agent(
      await render(h, ["node.metricsHost=[::]", "node.metricsPort=9900", "node.healthPort=9901"]),
    );
    assert.equal(envOf(moved, "LACE_METRICS_ADDR"), "[::]:9900");
    assert.equal(envOf(moved, "LACE_HEALTH_ADDR"), "127.0.0.1:9901");
    assert.equal(moved.livenessProbe.httpGet.port, 9901);
    assert.equal(moved.startupProbe.httpGet.port, 9901);
  },
);

helmTest("RBAC grants exactly the verbs the agent uses", async (h) => {
  const manifests = await render(h);
  const grants = only(manifests, "ClusterRole").rules.flatMap((rule: Manifest) =>
    rule.apiGroups.flatMap((group: string) =>
      rule.resources.flatMap((resource: string) =>
        rule.verbs.map((verb: string) => `${group}/${resource}:${verb}`)
      )
    )
  ).sort();
  assert.deepEqual(grants, [
    "/events:create",
    "/events:patch",
    "/nodes:get",
    "/pods:get",
    "/pods:list",
    "/pods:watch",
  ]);
  const binding = only(manifests, "ClusterRoleBinding");
  assert.equal(binding.roleRef.name, only(manifests, "ClusterRole").metadata.name);
  assert.deepEqual(binding.subjects, [
    { kind: "ServiceAccount", name: "lace", namespace: "lace-system" },
  ]);
  assert.equal(only(manifests, "ServiceAccount", "lace").metadata.namespace, "lace-system");
});

helmTest(
  "the agent may read its own DaemonSet and no other (to tell an uninstall from a restart), with CNI chaining or without",
  async (h) => {
    const manifests = await render(h);
    // Without chaining too: the pins go at uninstall only when the agent follows its DaemonSet.
    const withoutCni = await render(h, ["node.cni.enabled=false"]);
    assert.deepEqual(only(withoutCni, "Role", "lace"), only(manifests, "Role", "lace"));
    assert.deepEqual(
      only(withoutCni, "RoleBinding", "lace"),
      only(manifests, "RoleBinding", "lace"),
    );
    assert.equal(envOf(agent(withoutCni), "LACE_DAEMONSET"), "lace-system/lace");
    const role = only(manifests, "Role", "lace");
    assert.equal(role.metadata.namespace, "lace-system");
    assert.deepEqual(role.rules, [
      {
        apiGroups: ["apps"],
        resources: ["daemonsets"],
        resourceNames: ["lace"],
        verbs: ["get", "list", "watch"],
      },
    ]);
    const binding = only(manifests, "RoleBinding", "lace");
    assert.equal(binding.roleRef.name, role.metadata.name);
    assert.deepEqual(binding.subjects, [
      { kind: "ServiceAccount", name: "lace", namespace: "lace-system" },
    ]);
  },
);

helmTest(
  "the agent may get the kubernetes Service and EndpointSlice in default and kubeadm's cluster-info in kube-public, each by name, and nothing else there (the API server's addresses, which no pod may hold)",
  async (h) => {
    const manifests = await render(h);
    const inNamespace = (kind: string, namespace: string) => {
      const found = manifests.filter((m) =>
        m.kind === kind && m.metadata.name === "lace-api-server" &&
        m.metadata.namespace === namespace
      );
      assert.equal(found.length, 1, `one ${kind} lace-api-server in ${namespace}`);
      return found[0];
    };
    const rules: Record<string, unknown> = {
      default: [{
        apiGroups: [""],
        resources: ["services"],
        resourceNames: ["kubernetes"],
        verbs: ["get"],
      }, {
        // By name: a list would take any slice in default labelled for kubernetes.
        apiGroups: ["discovery.k8s.io"],
        resources: ["endpointslices"],
        resourceNames: ["kubernetes"],
        verbs: ["get"],
      }],
      "kube-public": [{
        apiGroups: [""],
        resources: ["configmaps"],
        resourceNames: ["cluster-info"],
        verbs: ["get"],
      }],
    };
    for (const [namespace, want] of Object.entries(rules)) {
      const role = inNamespace("Role", namespace);
      assert.deepEqual(role.rules, want);
      const binding = inNamespace("RoleBinding", namespace);
      assert.equal(binding.roleRef.name, role.metadata.name);
      assert.deepEqual(binding.subjects, [
        { kind: "ServiceAccount", name: "lace", namespace: "lace-system" },
      ]);
    }
    assert.equal(
      manifests.filter((m) => m.kind === "Role").length,
      4,
      "and the DaemonSet's, and helm test's",
    );
  },
);

helmTest(
  "helm test's ServiceAccount may get the agent's DaemonSet and list pods in its namespace, nothing else",
  async (h) => {
    const manifests = await render(h);
    const role = only(manifests, "Role", "lace-test");
    assert.equal(role.metadata.namespace, "lace-system");
    assert.deepEqual(role.rules, [
      { apiGroups: ["apps"], resources: ["daemonsets"], resourceNames: ["lace"], verbs: ["get"] },
      { apiGroups: [""], resources: ["pods"], verbs: ["list"] },
    ]);
    const binding = only(manifests, "RoleBinding", "lace-test");
    assert.equal(binding.roleRef.name, "lace-test");
    assert.deepEqual(binding.subjects, [
      { kind: "ServiceAccount", name: "lace-test", namespace: "lace-system" },
    ]);
    // Its token is mounted in the test pod only, not in any other pod that names the account.
    const account = only(manifests, "ServiceAccount", "lace-test");
    assert.equal(account.automountServiceAccountToken, false);
    const pod = only(manifests, "Pod", "lace-test");
    assert.equal(pod.spec.serviceAccountName, "lace-test");
    assert.equal(pod.spec.automountServiceAccountToken, true);
    // No other binding names it.
    const naming = manifests.filter((m) =>
      (m.subjects ?? []).some((s: Manifest) => s.name === "lace-test")
    );
    assert.deepEqual(naming.map((m) => `${m.kind}/${m.metadata.name}`), ["RoleBinding/lace-test"]);
  },
);
