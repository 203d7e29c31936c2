/**
 * `lace netcheck`'s Kubernetes adapter against the real kube-apiserver, authenticated as a
 * ServiceAccount that holds exactly the RBAC docs/netcheck.md lists (read from the document, so
 * the two cannot drift): the namespace, the probe DaemonSet under the real schema, the Lease
 * lock with real optimistic concurrency, pods listed by label, and fatal pod states. No
 * controller or kubelet runs here, so the test writes the DaemonSet's status and creates its
 * pods itself. Exec needs a kubelet to connect to: it is covered against the test API server
 * (tests/netcheck/kube_adapter_test.ts).
 */
import assert from "node:assert/strict";
import {
  AppsV1Api,
  CoordinationV1Api,
  CoreV1Api,
  type KubernetesObject,
  PatchStrategy,
  RbacAuthorizationV1Api,
  setHeaderOptions,
  type V1ContainerStatus,
  type V1Pod,
  type V1PodStatus,
} from "@kubernetes/client-node";
import { parseAllDocuments } from "yaml";
import { ConflictError } from "../../lib/netcheck/cluster/netcheck_cluster.ts";
import { type ClientNodeCluster, connectCluster } from "../../lib/netcheck/cluster/kube_adapter.ts";
import { acquireLease, LEASE_NAME } from "../../lib/netcheck/cluster/lease.ts";
import {
  APP_LABEL,
  APP_NAME,
  daemonSetName,
  probeDaemonSet,
  RUN_LABEL,
  runSelector,
} from "../../lib/netcheck/cluster/manifest.ts";
import { defaultNetcheckOptions } from "../../lib/netcheck/options.ts";
import { podState } from "../../lib/netcheck/cluster/readiness.ts";
import { EXIT_ERROR, runChecks } from "../../lib/netcheck/pipeline/run.ts";
import { startControlPlane } from "./fixture.ts";
import { applyObjects } from "./helm.ts";
import { controlPlaneTestOptions, controlPlaneUnavailableReason } from "./tools.ts";
import { waitFor } from "../helpers/wait.ts";

const unavailable = await controlPlaneUnavailableReason();
if (unavailable) console.warn(`Skipping netcheck control-plane tests: ${unavailable}`);

const NS = defaultNetcheckOptions().namespace;
const ACCOUNT = "netcheck";

/** The RBAC objects of docs/netcheck.md's "RBAC" section, as written there. */
async function documentedRbac(): Promise<KubernetesObject[]> {
  const doc = await Deno.readTextFile(new URL("../../docs/netcheck.md", import.meta.url));
  const section = doc.slice(doc.indexOf("## RBAC"));
  const yaml = section.match(/```yaml\n([\s\S]*?)```/)?.[1];
  if (!yaml) throw new Error(`docs/netcheck.md has no yaml block under "## RBAC"`);
  return parseAllDocuments(yaml).map((d) => d.toJS() as KubernetesObject);
}

/** Binds each documented role to the test's ServiceAccount. */
function bindingsFor(roles: KubernetesObject[]): KubernetesObject[] {
  return roles.map((role) => ({
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: `${role.kind}Binding`,
    metadata: { name: role.metadata!.name, namespace: role.metadata!.namespace },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: role.kind, name: role.metadata!.name },
    subjects: [{ kind: "ServiceAccount", namespace: NS, name: ACCOUNT }],
  } as KubernetesObject));
}

const merge = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);

function waiting(name: string, reason: string): V1ContainerStatus {
  return {
    name,
    ready: false,
    restartCount: reason === "CrashLoopBackOff" ? 3 : 0,
    image: `registry.invalid/${name}:1`,
    imageID: "",
    state: { waiting: { reason, message: `test: ${reason}` } },
  };
}

/** A probe pod of run as the DaemonSet controller would create it, with a status as a kubelet. */
async function createProbePod(
  core: CoreV1Api,
  runId: string,
  node: string,
  status: V1PodStatus,
): Promise<V1Pod> {
  const name = `${daemonSetName(runId)}-${node}`;
  await core.createNamespacedPod({
    namespace: NS,
    body: {
      metadata: { name, labels: { [APP_LABEL]: APP_NAME, [RUN_LABEL]: runId } },
      spec: {
        nodeName: node,
        containers: ["connect", "bandwidth"].map((c) => ({
          name: c,
          image: `registry.invalid/${c}:1`,
        })),
      },
    },
  });
  return await core.patchNamespacedPodStatus({ namespace: NS, name, body: { status } }, merge);
}

Deno.test({
  name: "the netcheck adapter works against the real API server with the documented RBAC",
  ...controlPlaneTestOptions(unavailable),
}, async (t) => {
  await using cp = await startControlPlane();
  const admin = cp.adminConfig();
  const core = admin.makeApiClient(CoreV1Api);
  const apps = admin.makeApiClient(AppsV1Api);
  await cp.createNamespace(NS);
  await core.createNamespacedServiceAccount({
    namespace: NS,
    body: { metadata: { name: ACCOUNT } },
  });
  const roles = await documentedRbac();
  assert.deepEqual(roles.map((r) => r.kind).sort(), ["ClusterRole", "Role"]);
  await applyObjects(admin, [...roles, ...bindingsFor(roles)], NS);
  const kubeconfig = await cp.writeKubeconfigForToken(
    await cp.serviceAccountToken(NS, ACCOUNT),
    ACCOUNT,
  );
  const cluster: ClientNodeCluster = await connectCluster(kubeconfig);
  // RBAC reaches the authorizer through an informer: wait until the Role and ClusterRole apply.
  await waitFor(async () => {
    await cluster.listPods(NS, runSelector("none"));
    await cluster.ensureNamespace(NS);
    return true;
  }, { timeout: 15_000, message: "the documented RBAC to take effect" });

  await t.step("the ServiceAccount holds no more than the documented access", async () => {
    const asAccount = cluster.kubeConfig.makeApiClient(CoreV1Api);
    await assert.rejects(asAccount.listNamespacedSecret({ namespace: NS }), /403|forbidden/i);
    await assert.rejects(
      asAccount.createNamespacedPod({ namespace: NS, body: { metadata: { name: "x" } } }),
      /403|forbidden/i,
    );
    const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
    assert.equal(
      (await rbac.readNamespacedRole({ namespace: NS, name: "lace-netcheck" }))
        .rules?.length,
      4,
    );
  });

  await t.step("ensureNamespace creates a missing namespace and is idempotent", async () => {
    await cluster.ensureNamespace("netcheck-fresh");
    await cluster.ensureNamespace("netcheck-fresh");
    await cluster.ensureNamespace(NS);
    const ns = await core.readNamespace({ name: "netcheck-fresh" });
    assert.equal(ns.status?.phase, "Active");
  });

  await t.step("the DaemonSet is created, patched and deleted under the real schema", async () => {
    const options = { ...defaultNetcheckOptions(), selector: { pool: "a" } };
    const manifest = probeDaemonSet(options, "r1");
    // Strict validation: the server knows every field of the manifest.
    await apps.createNamespacedDaemonSet({
      namespace: NS,
      body: structuredClone(manifest),
      dryRun: "All",
      fieldValidation: "Strict",
    });
    await cluster.applyDaemonSet(NS, manifest);
    const created = await apps.readNamespacedDaemonSet({ namespace: NS, name: "lace-netcheck-r1" });
    const connect = created.spec!.template.spec!.containers[0];
    assert.equal(connect.securityContext?.seccompProfile?.type, "RuntimeDefault");
    assert.deepEqual(created.spec!.template.spec!.nodeSelector, {
      pool: "a",
      "kubernetes.io/os": "linux",
    });
    // A second apply of the same run (a retried create) patches it to the new manifest.
    await cluster.applyDaemonSet(NS, probeDaemonSet({ ...options, image: "agnhost:new" }, "r1"));
    const patched = await apps.readNamespacedDaemonSet({ namespace: NS, name: "lace-netcheck-r1" });
    assert.equal(patched.spec!.template.spec!.containers[0].image, "agnhost:new");
    assert.equal(patched.metadata!.generation, 2);

    // No DaemonSet controller runs: its status is what the test writes.
    assert.equal(await cluster.daemonSetDesired(NS, "lace-netcheck-r1"), 0);
    await apps.patchNamespacedDaemonSetStatus({
      namespace: NS,
      name: "lace-netcheck-r1",
      body: { status: { desiredNumberScheduled: 2 } },
    }, merge);
    assert.equal(await cluster.daemonSetDesired(NS, "lace-netcheck-r1"), 2);

    await cluster.deleteDaemonSet(NS, "lace-netcheck-r1");
    assert.equal(await cluster.daemonSetDesired(NS, "lace-netcheck-r1"), null);
    await cluster.deleteDaemonSet(NS, "lace-netcheck-r1");
  });

  await t.step("the Lease lock refuses a second run and names the one holding it", async () => {
    const first = await acquireLease(cluster, NS, "run-1 by ops@laptop", 60);
    await assert.rejects(
      acquireLease(cluster, NS, "run-2", 60),
      /Another netcheck run "run-1 by ops@laptop" holds Lease "lace-system\/lace-netcheck"/,
    );
    const stored = await admin.makeApiClient(CoordinationV1Api)
      .readNamespacedLease({ namespace: NS, name: LEASE_NAME });
    assert.equal(stored.spec?.holderIdentity, "run-1 by ops@laptop");
    assert.match(String(stored.spec?.renewTime), /\.\d{6}Z$/);
    await first.release();
    assert.equal(await cluster.getLease(NS, LEASE_NAME), null);
  });

  await t.step("an expired Lease is taken over; a stale update is a conflict", async () => {
    const crashed = await cluster.createLease(NS, {
      name: LEASE_NAME,
      holder: "crashed",
      durationS: 10,
      renewTime: Date.now() - 60_000,
      resourceVersion: "",
    });
    const lock = await acquireLease(cluster, NS, "run-3", 60);
    assert.equal(lock.tookOverFrom, "crashed");
    assert.equal((await cluster.getLease(NS, LEASE_NAME))?.holder, "run-3");
    // The server's optimistic concurrency: an update from the old resourceVersion fails.
    await assert.rejects(cluster.updateLease(NS, crashed), ConflictError);
    await lock.release();
    assert.equal(await cluster.getLease(NS, LEASE_NAME), null);
  });

  await t.step("pods are listed by the run's labels, with addresses and readiness", async () => {
    const running: V1PodStatus = {
      phase: "Running",
      conditions: [{ type: "Ready", status: "True" }],
      podIP: "10.1.0.2",
      podIPs: [{ ip: "10.1.0.2" }, { ip: "fd00::2" }],
    };
    await createProbePod(core, "r2", "node-a", running);
    await createProbePod(core, "r2", "node-b", { phase: "Pending" });
    await createProbePod(core, "r9", "node-a", running);
    const pods = await cluster.listPods(NS, runSelector("r2"));
    assert.deepEqual(pods.map((p) => p.nodeName).sort(), ["node-a", "node-b"]);
    const a = pods.find((p) => p.nodeName === "node-a")!;
    assert.deepEqual(a.podIPs, ["10.1.0.2", "fd00::2"]);
    assert.deepEqual(podState(a), { kind: "ready" });
    assert.deepEqual(podState(pods.find((p) => p.nodeName === "node-b")!), { kind: "starting" });
  });

  await t.step("container states that will not heal are fatal", async () => {
    await createProbePod(core, "r3", "node-a", {
      phase: "Pending",
      containerStatuses: [
        waiting("connect", "ContainerCreating"),
        waiting("bandwidth", "ImagePullBackOff"),
      ],
    });
    await createProbePod(core, "r3", "node-b", {
      phase: "Running",
      containerStatuses: [waiting("connect", "CrashLoopBackOff")],
    });
    const states = (await cluster.listPods(NS, runSelector("r3")))
      .map((p) => `${p.nodeName}: ${JSON.stringify(podState(p))}`).sort();
    assert.deepEqual(states, [
      `node-a: ${JSON.stringify({ kind: "fatal", reason: "bandwidth: ImagePullBackOff" })}`,
      `node-b: ${JSON.stringify({ kind: "fatal", reason: "connect: CrashLoopBackOff" })}`,
    ]);
  });

  await t.step("a run whose probe pod cannot pull its image stops and cleans up", async () => {
    const runId = "fatal1";
    // Plays the DaemonSet controller and the kubelet: once the run's DaemonSet exists, it
    // schedules one pod whose image pull fails.
    const controller = (async () => {
      await waitFor(
        () => apps.readNamespacedDaemonSet({ namespace: NS, name: daemonSetName(runId) }),
        { timeout: 30_000, message: "the run's DaemonSet" },
      );
      await apps.patchNamespacedDaemonSetStatus({
        namespace: NS,
        name: daemonSetName(runId),
        body: { status: { desiredNumberScheduled: 1 } },
      }, merge);
      await createProbePod(core, runId, "node-a", {
        phase: "Pending",
        containerStatuses: [waiting("bandwidth", "ErrImagePull")],
      });
    })();
    const result = await runChecks({ ...defaultNetcheckOptions(), readyTimeoutMs: 30_000 }, {
      cluster,
      runId,
      progress: { write: () => {}, isTerminal: false },
      sinks: [],
      pollMs: 100,
    });
    await controller;
    assert.equal(result.exitCode, EXIT_ERROR, result.outcome.error ?? "");
    assert.match(
      result.outcome.error ?? "",
      /Probe pod "lace-netcheck-fatal1-node-a" on node "node-a" cannot start: bandwidth: ErrImagePull/,
    );
    assert.doesNotMatch(result.outcome.error ?? "", /403/);
    assert.equal(await cluster.daemonSetDesired(NS, daemonSetName(runId)), null, "DaemonSet left");
    assert.equal(await cluster.getLease(NS, LEASE_NAME), null, "Lease left");
  });
});
