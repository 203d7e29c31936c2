/**
 * The Helm chart's names and namespaces, rendered by the real helm: nameOverride,
 * fullnameOverride and namespaceOverride reach every template (through _helpers.tpl, as the
 * common bitnami and Cilium helpers do), and the namespaces the chart creates carry the Pod
 * Security level their pods need. The real API server taking them is tests/chart_apply_test.ts.
 * helm comes from scripts/install_helm.sh; without it these tests are skipped.
 */
import assert from "node:assert/strict";
import {
  agent,
  envOf,
  helmTest,
  type Manifest,
  only,
  parseManifests,
  refusal,
  render,
  renderText,
} from "./helpers/helm.ts";

/** Where the chart puts a namespaced object on purpose outside the agent's namespace. */
const FIXED_NAMESPACES = ["default", "kube-public", "lace-netcheck"];

helmTest(
  "fullnameOverride and namespaceOverride name and place every object, and every binding's subject",
  async (h) => {
    // Every optional object too: netcheck's, the monitoring's.
    const optional = [
      "netcheck.enabled=true",
      "metrics.serviceMonitor.enabled=true",
      "metrics.prometheusRule.enabled=true",
      "metrics.dashboard.enabled=true",
    ];
    const text = await renderText(
      h,
      ["fullnameOverride=fx", "namespaceOverride=agents", ...optional],
      { name: "rel", namespace: "release-ns" },
    );
    // Neither the release's namespace nor the default full name is left anywhere.
    assert.doesNotMatch(text, /release-ns/);
    assert.doesNotMatch(text, /rel-lace/);
    const manifests = parseManifests(text);
    assert.ok(manifests.length >= 20, `only ${manifests.length} objects rendered`);
    for (const m of manifests) {
      const where = `${m.kind} ${m.metadata.name}`;
      if (m.kind !== "Namespace") assert.match(m.metadata.name, /^fx(-|$)/, where);
      const ns = m.metadata.namespace;
      if (ns !== undefined) assert.ok(ns === "agents" || FIXED_NAMESPACES.includes(ns), where);
      for (const subject of m.subjects ?? []) assert.equal(subject.namespace, "agents", where);
    }
    const ds = only(manifests, "DaemonSet");
    assert.equal(ds.metadata.namespace, "agents");
    assert.equal(ds.spec.template.spec.serviceAccountName, "fx");
    // The agent finds its own DaemonSet by this name, and its Role grants exactly that one.
    assert.equal(envOf(agent(manifests), "LACE_DAEMONSET"), "agents/fx");
    assert.deepEqual(only(manifests, "Role", "fx").rules[0].resourceNames, ["fx"]);
  },
);

helmTest(
  "nameOverride renames the objects and the name label, and the selector with them",
  async (h) => {
    const manifests = await render(h, ["nameOverride=probe-agent"]);
    const ds = only(manifests, "DaemonSet");
    assert.equal(ds.metadata.name, "lace-probe-agent");
    assert.equal(ds.spec.selector.matchLabels["app.kubernetes.io/name"], "probe-agent");
    assert.equal(ds.spec.template.metadata.labels["app.kubernetes.io/name"], "probe-agent");
    for (const m of manifests) {
      // The test pod's and netcheck's runner's own name labels keep the agent's selector off them.
      assert.match(
        m.metadata.labels["app.kubernetes.io/name"],
        /^probe-agent(-|$)/,
        m.metadata.name,
      );
    }
    // A release whose name contains the chart's is not repeated: the same rule as without it.
    const contained = await render(h, ["nameOverride=lace"]);
    assert.equal(only(contained, "DaemonSet").metadata.name, "lace");
  },
);

helmTest("helm refuses a name or namespace override that is no DNS label", async (h) => {
  for (const set of ["fullnameOverride=Lace_Agent", "namespaceOverride=a.b", "nameOverride=-x"]) {
    const stderr = await refusal(h, [set]);
    const [key, value] = set.split("=");
    assert.match(stderr, new RegExp(`/${key}': '${value}' does not match pattern`), stderr);
  }
  const long = await refusal(h, [`namespaceOverride=${"n".repeat(64)}`]);
  assert.match(long, /namespaceOverride': maxLength: got 64, want 63/, long);
});

helmTest(
  "createNamespace creates the agent's namespace for the privileged Pod Security level, and keeps it on uninstall",
  async (h) => {
    const off = await render(h, ["namespaceOverride=agents"]);
    assert.equal(off.filter((m) => m.kind === "Namespace").length, 0);
    const manifests = await render(h, ["namespaceOverride=agents", "createNamespace=true"]);
    const ns = only(manifests, "Namespace");
    assert.equal(ns.metadata.name, "agents");
    assert.equal(ns.metadata.labels["pod-security.kubernetes.io/enforce"], "privileged");
    assert.equal(ns.metadata.annotations["helm.sh/resource-policy"], "keep");
    assert.equal(only(manifests, "DaemonSet").metadata.namespace, "agents");
  },
);

helmTest(
  "createNamespace is refused with a reason unless namespaceOverride names another namespace than the release's",
  async (h) => {
    for (
      const set of [["createNamespace=true"], [
        "createNamespace=true",
        "namespaceOverride=lace-system",
      ]]
    ) {
      const stderr = await refusal(h, set);
      assert.match(
        stderr,
        /createNamespace needs namespaceOverride naming another namespace than the release's "lace-system"/,
        stderr,
      );
    }
  },
);

helmTest(
  "the namespaces the chart creates carry the Pod Security level of their pods: privileged for the agent, baseline for netcheck's probes",
  async (h) => {
    const manifests = await render(h, [
      "namespaceOverride=agents",
      "createNamespace=true",
      "netcheck.enabled=true",
    ]);
    const levels = Object.fromEntries(
      manifests.filter((m) => m.kind === "Namespace").map((m: Manifest) => [
        m.metadata.name,
        m.metadata.labels["pod-security.kubernetes.io/enforce"],
      ]),
    );
    assert.deepEqual(levels, { agents: "privileged", "lace-netcheck": "baseline" });
  },
);
