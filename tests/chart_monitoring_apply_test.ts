/**
 * The chart's Prometheus Operator objects as the real API server takes them: with the
 * Operator's own CRDs installed (scripts/build_k8s_tools.sh keeps them, from its module), the
 * ServiceMonitor, PodMonitor and PrometheusRule are accepted and kept as rendered, so no field is
 * misspelled, misplaced or of the wrong type (a structural schema prunes what it does not know).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { ApiextensionsV1Api, type KubernetesObject } from "@kubernetes/client-node";
import { stringify } from "yaml";
import { type ControlPlane, startControlPlane } from "./kube/fixture.ts";
import { helmTemplate } from "./kube/helm.ts";
import {
  chartOnControlPlaneUnavailableReason,
  controlPlaneTestOptions,
  kubeToolPath,
} from "./kube/tools.ts";
import { isExecutable } from "./helpers/executable.ts";
import { operatorCrdsDir, operatorCrdsMissing } from "./helpers/promtool.ts";
import { waitFor } from "./helpers/wait.ts";

const KUBECTL = await kubeToolPath("kubectl");
const unavailable = (await chartOnControlPlaneUnavailableReason()) ?? operatorCrdsMissing() ??
  (isExecutable(KUBECTL)
    ? undefined
    : `"${KUBECTL}" is not built; run scripts/build_k8s_tools.sh kubectl`);
const NAMESPACE = "lace-system";
const KINDS = ["servicemonitors", "podmonitors", "prometheusrules"];

/**
 * `kubectl create -f FILE` on `cp` with the API server's strict field validation (an unknown or
 * duplicate field is refused, not dropped); the one object of FILE as the server returns it.
 * client-node's typed serializer drops the CRDs' `x-kubernetes-*` schema keys, kubectl does not.
 */
async function kubectlCreate(cp: ControlPlane, file: string): Promise<KubernetesObject> {
  const out = await new Deno.Command(KUBECTL, {
    args: [
      "--kubeconfig",
      cp.kubeconfigPath,
      "create",
      "--validate=strict",
      "-o",
      "json",
      "-f",
      file,
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  if (!out.success) {
    throw new Error(`kubectl create -f ${file} failed: ${new TextDecoder().decode(out.stderr)}`);
  }
  return JSON.parse(text);
}

Deno.test({
  name: `the API server with the Prometheus Operator's CRDs keeps the chart's ServiceMonitor, ` +
    `PodMonitor and PrometheusRule as rendered${unavailable ? ` (skipped: ${unavailable})` : ""}`,
  ...controlPlaneTestOptions(unavailable),
  async fn() {
    await using cp = await startControlPlane();
    await cp.createNamespace(NAMESPACE);
    for (const kind of KINDS) {
      await kubectlCreate(cp, join(operatorCrdsDir(), `monitoring.coreos.com_${kind}.yaml`));
    }
    const extensions = cp.adminConfig().makeApiClient(ApiextensionsV1Api);
    for (const kind of KINDS) {
      await waitFor(async () => {
        const crd = await extensions.readCustomResourceDefinition({
          name: `${kind}.monitoring.coreos.com`,
        });
        return crd.status?.conditions?.some((c) => c.type === "Established" && c.status === "True");
      }, { timeout: 30_000, message: `the ${kind} CRD established` });
    }
    const rendered = (await helmTemplate({
      namespace: NAMESPACE,
      set: [
        "metrics.serviceMonitor.enabled=true",
        "metrics.serviceMonitor.labels.release=prometheus",
        "metrics.podMonitor.enabled=true",
        "metrics.prometheusRule.enabled=true",
      ],
    })).filter((o) => o.apiVersion === "monitoring.coreos.com/v1");
    assert.deepEqual(rendered.map((o) => o.kind).sort(), [
      "PodMonitor",
      "PrometheusRule",
      "ServiceMonitor",
    ]);
    const created: KubernetesObject[] = [];
    for (const object of rendered) {
      const file = join(cp.dir, `${object.kind}.yaml`);
      await Deno.writeTextFile(file, stringify(object));
      created.push(await kubectlCreate(cp, file));
    }
    for (const [i, object] of created.entries()) {
      // deno-lint-ignore no-explicit-any
      const spec = (o: KubernetesObject) => (o as any).spec;
      assert.deepEqual(spec(object), spec(rendered[i]), `${object.kind} kept as rendered`);
    }
  },
});
