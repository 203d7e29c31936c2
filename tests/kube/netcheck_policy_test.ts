/**
 * The netcheck runner's confinement, rendered by the real helm and enforced by the real API
 * server: as the runner's ServiceAccount (its token, the chart's Role), a DaemonSet whose pods
 * could take the node (privileged, host namespaces, host paths, capabilities, a token) is
 * refused, by create and by patch, in a namespace that enforces no Pod Security level; the probe
 * DaemonSets netcheck itself makes are admitted; and the policy binds the runner only, not an
 * admin. Dry runs: nothing is stored, no controller runs.
 */
import assert from "node:assert/strict";
import {
  ApiException,
  AppsV1Api,
  CoreV1Api,
  type KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1DaemonSet,
  type V1PodSpec,
} from "@kubernetes/client-node";
import { loadKubeConfig } from "../../lib/kube/client.ts";
import { probeDaemonSet } from "../../lib/netcheck/cluster/manifest.ts";
import { defaultNetcheckOptions } from "../../lib/netcheck/options.ts";
import { waitFor } from "../helpers/wait.ts";
import { startControlPlane } from "./fixture.ts";
import { applyObjects, helmTemplate } from "./helm.ts";
import { chartOnControlPlaneUnavailableReason, controlPlaneTestOptions } from "./tools.ts";

const unavailable = await chartOnControlPlaneUnavailableReason();
if (unavailable) console.warn(`Skipping the netcheck runner policy tests: ${unavailable}`);

const SYSTEM = "lace-system";
const NS = "lace-netcheck";
const RUNNER = "lace-netcheck";

/** The probe DaemonSet of run `runId` as netcheck makes it, with `change` applied to its pod. */
function probe(runId: string, change: (pod: V1PodSpec) => void = () => {}): V1DaemonSet {
  // A copy through JSON: the manifest shares one security context between containers and calls.
  const ds = JSON.parse(
    JSON.stringify(probeDaemonSet({ ...defaultNetcheckOptions(), namespace: NS }, runId)),
  ) as V1DaemonSet;
  change(ds.spec!.template.spec!);
  return ds;
}

/** "admitted", or the API server's refusal: its status and message. */
async function admit(config: KubeConfig, body: V1DaemonSet, dryRun = true) {
  try {
    await config.makeApiClient(AppsV1Api).createNamespacedDaemonSet({
      namespace: NS,
      body,
      ...(dryRun ? { dryRun: "All" } : {}),
    });
    return "admitted";
  } catch (error) {
    if (!(error instanceof ApiException)) throw error;
    return `${error.code}: ${JSON.parse(String(error.body)).message}`;
  }
}

Deno.test({
  name:
    "the netcheck runner's identity cannot create or patch a DaemonSet of privileged pods, and netcheck's own probe DaemonSets pass",
  ...controlPlaneTestOptions(unavailable),
}, async (t) => {
  await using cp = await startControlPlane();
  const admin = cp.adminConfig();
  await cp.createNamespace(SYSTEM);
  // A namespace the operator made (createNamespace: false) that enforces no Pod Security level.
  await cp.createNamespace(NS);
  const objects = await helmTemplate({
    namespace: SYSTEM,
    set: ["netcheck.enabled=true", "netcheck.createNamespace=false"],
    showOnly: ["templates/netcheck.yaml"],
  });
  assert.ok(!objects.some((o) => o.kind === "Namespace"));
  await applyObjects(admin, objects, SYSTEM);
  const ns = await admin.makeApiClient(CoreV1Api).readNamespace({ name: NS });
  assert.equal(ns.metadata?.labels?.["pod-security.kubernetes.io/enforce"], undefined);
  const runner = loadKubeConfig({
    kubeconfig: await cp.writeKubeconfigForToken(
      await cp.serviceAccountToken(SYSTEM, RUNNER),
      RUNNER,
    ),
  });
  const privileged = probe("p", (pod) => {
    pod.containers[0].securityContext = { privileged: true };
  });
  // The Role and the policy reach the API server through informers: wait until both apply.
  const first = await waitFor(async () => {
    const answer = await admit(runner, privileged);
    return answer.startsWith("403") && /must run every container unprivileged/.test(answer) &&
      answer;
  }, { timeout: 30_000, interval: 200, message: "the policy to refuse a privileged DaemonSet" });

  await t.step("a privileged container is refused, named", () => {
    assert.match(first, /ValidatingAdmissionPolicy 'lace-netcheck'/);
    assert.match(first, /not so: connect$/);
  });

  await t.step(
    "netcheck's own probe DaemonSets are admitted, with --udp and a selector too",
    async () => {
      assert.equal(await admit(runner, probe("ok")), "admitted");
      const udp = probeDaemonSet(
        { ...defaultNetcheckOptions(), namespace: NS, udp: true, selector: { pool: "a" } },
        "udp",
      ) as V1DaemonSet;
      assert.equal(await admit(runner, udp), "admitted");
    },
  );

  const refusals: [string, (pod: V1PodSpec) => void, RegExp][] = [
    ["the node's network", (p) => p.hostNetwork = true, /network, PID or IPC namespace/],
    ["the node's PID namespace", (p) => p.hostPID = true, /network, PID or IPC namespace/],
    ["the node's IPC namespace", (p) => p.hostIPC = true, /network, PID or IPC namespace/],
    [
      "a host path",
      (p) => p.volumes!.push({ name: "root", hostPath: { path: "/" } }),
      /emptyDir volumes only/,
    ],
    [
      "a service account token",
      (p) => p.automountServiceAccountToken = true,
      /automountServiceAccountToken: false/,
    ],
    [
      "an added capability",
      (p) => p.containers[1].securityContext!.capabilities!.add = ["NET_ADMIN"],
      /not so: bandwidth$/,
    ],
    [
      "capabilities not dropped",
      (p) => delete p.containers[0].securityContext!.capabilities,
      /not so: connect$/,
    ],
    [
      "privilege escalation",
      (p) => p.containers[0].securityContext!.allowPrivilegeEscalation = true,
      /not so: connect$/,
    ],
    [
      "seccomp Unconfined",
      (p) => p.containers[0].securityContext!.seccompProfile = { type: "Unconfined" },
      /not so: connect$/,
    ],
    [
      "a host port",
      (p) => p.containers[0].ports![0].hostPort = 1199,
      /not so: connect$/,
    ],
    [
      "a privileged init container",
      (p) =>
        p.initContainers = [{
          name: "setup",
          image: "busybox",
          securityContext: { privileged: true },
        }],
      /not so: setup$/,
    ],
    ["a runtime class", (p) => p.runtimeClassName = "unconfined", /runtime class/],
  ];
  await t.step("a DaemonSet that could take the node is refused, saying why", async () => {
    for (const [what, change, why] of refusals) {
      const answer = await admit(runner, probe("bad", change));
      assert.match(answer, /^403: /, what);
      assert.match(answer, why, `${what}: ${answer}`);
    }
  });

  await t.step("a probe DaemonSet patched into a privileged one is refused", async () => {
    assert.equal(await admit(runner, probe("patched"), false), "admitted");
    const apps = runner.makeApiClient(AppsV1Api);
    const patch = apps.patchNamespacedDaemonSet(
      {
        name: "lace-netcheck-patched",
        namespace: NS,
        body: { spec: { template: { spec: { hostPID: true } } } },
      },
      setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
    );
    await assert.rejects(patch, (e: ApiException<string>) => {
      assert.equal(e.code, 403);
      assert.match(String(e.body), /network, PID or IPC namespace/);
      return true;
    });
  });

  await t.step(
    "the policy binds the runner only: an admin's privileged DaemonSet is admitted",
    async () => {
      assert.equal(await admit(admin, privileged), "admitted");
    },
  );
});
