/**
 * The Helm chart's admission policies, rendered by the real helm: the probe host policy and the
 * network annotation policy, and how each follows its values. The real API server enforcing them
 * is tests/kube/vap_test.ts and tests/kube/network_annotation_policy_test.ts. helm comes from
 * scripts/install_helm.sh; without it these tests are skipped.
 */
import assert from "node:assert/strict";
import { helmTest, type Manifest, only, refusal, render } from "./helpers/helm.ts";

const HOST_POLICY = "lace-probe-host";
const ANNOTATION_POLICY = "lace-network-annotations";

/** A policy's CEL variables by name. */
function variablesOf(policy: Manifest): Record<string, string> {
  return Object.fromEntries(policy.spec.variables.map((v: Manifest) => [v.name, v.expression]));
}

helmTest("the admission policy is rendered by default and exempts kube-system", async (h) => {
  const manifests = await render(h);
  const policy = only(manifests, "ValidatingAdmissionPolicy", HOST_POLICY);
  assert.equal(policy.apiVersion, "admissionregistration.k8s.io/v1");
  const offenders = policy.spec.variables.find((v: Manifest) => v.name === "offenders").expression;
  for (const probe of ["livenessProbe", "readinessProbe", "startupProbe"]) {
    assert.match(offenders, new RegExp(`has\\(c\\.${probe}\\.httpGet\\.host\\)`));
    assert.match(offenders, new RegExp(`has\\(c\\.${probe}\\.tcpSocket\\.host\\)`));
  }
  assert.match(policy.spec.variables[0].expression, /initContainers/);
  assert.match(variablesOf(policy).hostNetwork, /object\.spec\.hostNetwork/);
  assert.match(policy.spec.validations[0].expression, /variables\.hostNetwork \|\|/);
  // A host-network pod's host may be the node itself or its link only.
  const foreign = variablesOf(policy).foreignHosts;
  for (const probe of ["livenessProbe", "readinessProbe", "startupProbe"]) {
    assert.match(foreign, new RegExp(`ip\\(c\\.${probe}\\.httpGet\\.host\\)\\.isLoopback\\(\\)`));
    assert.match(foreign, new RegExp(`ip\\(c\\.${probe}\\.tcpSocket\\.host\\)\\.isLoopback\\(\\)`));
  }
  assert.match(policy.spec.validations[1].expression, /!variables\.hostNetwork \|\|/);
  const binding = only(manifests, "ValidatingAdmissionPolicyBinding", HOST_POLICY);
  assert.equal(binding.spec.policyName, policy.metadata.name);
  assert.deepEqual(binding.spec.validationActions, ["Deny"]);
  assert.deepEqual(binding.spec.matchResources.namespaceSelector.matchExpressions, [
    { key: "kubernetes.io/metadata.name", operator: "NotIn", values: ["kube-system"] },
  ]);
});

helmTest("the admission policy follows its values", async (h) => {
  const off = await render(h, ["admissionPolicy.enabled=false"]);
  assert.equal(off.filter((m) => m.kind.startsWith("ValidatingAdmissionPolicy")).length, 0);
  const exempt = await render(h, ['admissionPolicy.exemptNamespaces:=["kube-system","infra"]']);
  const selector = only(exempt, "ValidatingAdmissionPolicyBinding", HOST_POLICY).spec
    .matchResources.namespaceSelector;
  assert.deepEqual(selector.matchExpressions[0].values, ["kube-system", "infra"]);
  const none = await render(h, ["admissionPolicy.exemptNamespaces:=[]"]);
  assert.equal(
    only(none, "ValidatingAdmissionPolicyBinding", HOST_POLICY).spec.matchResources,
    undefined,
  );
});

helmTest(
  "the network annotation policy guards the default keys on create and update, in every namespace",
  async (h) => {
    const manifests = await render(h);
    const policy = only(manifests, "ValidatingAdmissionPolicy", ANNOTATION_POLICY);
    assert.equal(policy.spec.failurePolicy, "Fail");
    const rule = policy.spec.matchConstraints.resourceRules[0];
    assert.deepEqual(rule.operations, ["CREATE", "UPDATE"]);
    assert.ok(rule.resources.includes("pods") && rule.resources.includes("pods/status"));
    // A Binding's annotations are copied onto the pod, so a Binding may set them too.
    const bindings = policy.spec.matchConstraints.resourceRules[1];
    assert.deepEqual(bindings.operations, ["CREATE"]);
    assert.deepEqual(bindings.resources, ["pods/binding", "bindings"]);
    const vars = variablesOf(policy);
    assert.deepEqual(JSON.parse(vars.keys), ["lace.io/network", "lace.io/network-id"]);
    assert.deepEqual(JSON.parse(vars.writers), ["system:serviceaccount:kube-system:lace-cni"]);
    assert.match(policy.spec.validations[0].expression, /request\.userInfo\.username in/);
    const binding = only(manifests, "ValidatingAdmissionPolicyBinding", ANNOTATION_POLICY);
    assert.equal(binding.spec.policyName, ANNOTATION_POLICY);
    assert.deepEqual(binding.spec.validationActions, ["Deny"]);
    // kube-system is exempt from the host rule only: no namespace may spoof a network.
    assert.equal(binding.spec.matchResources, undefined);
  },
);

helmTest("the network annotation policy follows the annotation keys and writers", async (h) => {
  const manifests = await render(h, [
    "node.annotations.network=example.com/net",
    "node.annotations.networkId=example.com/net-id",
    'admissionPolicy.networkAnnotationWriters:=["system:serviceaccount:net:plugin","alice"]',
  ]);
  const vars = variablesOf(only(manifests, "ValidatingAdmissionPolicy", ANNOTATION_POLICY));
  assert.deepEqual(JSON.parse(vars.keys), ["example.com/net", "example.com/net-id"]);
  assert.deepEqual(JSON.parse(vars.writers), ["system:serviceaccount:net:plugin", "alice"]);
  const none = await render(h, ["admissionPolicy.networkAnnotationWriters:=[]"]);
  const noWriters = variablesOf(only(none, "ValidatingAdmissionPolicy", ANNOTATION_POLICY));
  assert.deepEqual(JSON.parse(noWriters.writers), []);
});

helmTest(
  "each admission policy's binding takes its own validationActions, so one can warn while the other denies",
  async (h) => {
    const actions = (manifests: Manifest[]) =>
      [HOST_POLICY, ANNOTATION_POLICY].map((name) =>
        only(manifests, "ValidatingAdmissionPolicyBinding", name).spec.validationActions
      );
    assert.deepEqual(actions(await render(h)), [["Deny"], ["Deny"]]);
    const staged = await render(h, [
      'admissionPolicy.validationActions.probeHost:=["Warn","Audit"]',
    ]);
    assert.deepEqual(actions(staged), [["Warn", "Audit"], ["Deny"]]);
    const other = await render(h, [
      'admissionPolicy.validationActions.networkAnnotations:=["Audit"]',
    ]);
    assert.deepEqual(actions(other), [["Deny"], ["Audit"]]);
  },
);

helmTest(
  "helm refuses one validationActions list for both policies, and Deny with Warn, naming the key",
  async (h) => {
    const both = await refusal(h, ['admissionPolicy.validationActions:=["Warn","Audit"]']);
    assert.match(both, /admissionPolicy\/validationActions': got array, want object/, both);
    const denyWarn = await refusal(h, [
      'admissionPolicy.validationActions.probeHost:=["Deny","Warn"]',
    ]);
    assert.match(denyWarn, /admissionPolicy\/validationActions\/probeHost/, denyWarn);
    const unknown = await refusal(h, ["admissionPolicy.validationActions.probes={Deny}"]);
    assert.match(unknown, /additional propert.*probes/i);
  },
);
