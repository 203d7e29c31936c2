/**
 * When the agent restores the node's CNI configuration and removes its pins at shutdown, against
 * the real kube-apiserver and the real kernel: the chart applied, the agent authenticated as the
 * chart's ServiceAccount, chaining a flannel conflist in a directory of the test's and attached to
 * the simulated node's kubelet cgroup. An ordinary stop leaves everything. A DaemonSet deleted
 * with `--cascade=orphan` and created again (same name, new uid) is Lace still installed: the
 * agent that stops then leaves the chain, the links and the maps. A DaemonSet deleted for good,
 * its Role gone before the agent stops (as `helm uninstall` does), is an uninstall: the file comes
 * back byte for byte and the pins go, so the links detach from the kubelet cgroup. No controller
 * manager runs, so the test plays the garbage collector's part of an orphan delete.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  AppsV1Api,
  CoreV1Api,
  type KubernetesObject,
  PatchStrategy,
  RbacAuthorizationV1Api,
  setHeaderOptions,
  type V1DaemonSet,
} from "@kubernetes/client-node";
import { FLANNEL } from "../../lib/cni/chaining/_fixtures.ts";
import { pluginDir } from "../../lib/cni/chaining/_world.ts";
import { pinnedLayouts, pinnedLinkStatus, PROGRAM_NAMES } from "../../lib/datapath/pins.ts";
import { loadKubeConfig } from "../../lib/kube/client.ts";
import { apiStatus } from "../../lib/kube/api_error.ts";
import { AgentWorld } from "../helpers/agent_process.ts";
import { needsRoot } from "../helpers/skip.ts";
import { waitFor } from "../helpers/wait.ts";
import { startControlPlane } from "./fixture.ts";
import { applyObjects, helmTemplate } from "./helm.ts";
import { chartOnControlPlaneUnavailableReason, controlPlaneTestOptions } from "./tools.ts";

const unavailable = needsRoot() ?? await chartOnControlPlaneUnavailableReason();
if (unavailable) console.warn(`Skipping the CNI uninstall tests: ${unavailable}`);

const SYSTEM = "lace-system";
const NAME = "lace";
const NODE = "e2e-node";

Deno.test({
  name:
    "the agent restores the CNI configuration and removes its pins only when its DaemonSet is deleted for good, not at a stop or when one of its name is created again",
  ...controlPlaneTestOptions(unavailable),
}, async (t) => {
  await using cp = await startControlPlane();
  const admin = cp.adminConfig();
  const apps = admin.makeApiClient(AppsV1Api);
  await cp.createNamespace(SYSTEM);
  const chart = await helmTemplate({ namespace: SYSTEM });
  const daemonSet = chart.find((o) => o.kind === "DaemonSet") as KubernetesObject;
  assert.equal(daemonSet?.metadata?.name, NAME);
  await applyObjects(admin, chart, SYSTEM);
  const kubeconfig = await cp.writeKubeconfigForToken(
    await cp.serviceAccountToken(SYSTEM, NAME),
    NAME,
  );
  const asAgent = loadKubeConfig({ kubeconfig });
  await waitFor(async () => {
    await asAgent.makeApiClient(AppsV1Api).readNamespacedDaemonSet({
      name: NAME,
      namespace: SYSTEM,
    });
    await asAgent.makeApiClient(CoreV1Api).listPodForAllNamespaces({ limit: 1 });
    return true;
  }, { timeout: 15_000, message: "the chart's RBAC to take effect" });
  await admin.makeApiClient(CoreV1Api).createNode({ body: { metadata: { name: NODE } } });

  await using w = await AgentWorld.create();
  const root = await Deno.makeTempDir({ prefix: "lace-e2e-cni-" });
  await using _root = { [Symbol.asyncDispose]: () => Deno.remove(root, { recursive: true }) };
  const confDir = join(root, "net.d");
  await Deno.mkdir(confDir);
  const conflist = join(confDir, "10-flannel.conflist");
  await Deno.writeTextFile(conflist, FLANNEL);
  const binDir = pluginDir(root);
  const startAgent = async () => {
    const agent = w.startAgent([
      `--kubeconfig=${kubeconfig}`,
      `--cni-socket=${join(root, "cni.sock")}`,
      "--cni-chaining=auto",
      `--cni-conf-dir=${confDir}`,
      `--cni-state-dir=${join(root, "state")}`,
      `--cni-bin-dir=${binDir}`,
      `--daemonset=${SYSTEM}/${NAME}`,
    ]);
    await agent.ready(60_000);
    await waitFor(() => /"type": "lace"/.test(Deno.readTextFileSync(conflist)), {
      message: "the lace plugin chained into the conflist",
    });
    return agent;
  };
  const logged = (agent: { logs: string[] }, pattern: RegExp, what: string) =>
    waitFor(() => agent.logs.some((l) => pattern.test(l)), {
      timeout: 15_000,
      message: `${what}\n--- agent log ---\n${agent.logs.slice(-30).join("\n")}`,
    });
  // The kernel's word on the kubelet cgroup: the cgroup links attached to it, by attach type.
  const kubeletCgroupId = Deno.statSync(w.cgroups.kubelet).ino!;
  const kubeletLinks = async () => {
    const out = await new Deno.Command("bpftool", { args: ["-j", "link", "show"] }).output();
    assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
    const links = JSON.parse(new TextDecoder().decode(out.stdout)) as {
      id: number;
      cgroup_id?: number;
      attach_type?: string;
    }[];
    return links.filter((l) => l.cgroup_id === kubeletCgroupId).map((l) => l.attach_type).sort();
  };
  const assertInPlace = async (log: string) => {
    for (const program of PROGRAM_NAMES) {
      const link = pinnedLinkStatus(w.pinPath, program);
      assert.ok(link.pinned && link.alive, `link_${program} pinned and attached\n${log}`);
      assert.equal(link.cgroupId, BigInt(kubeletCgroupId), `link_${program} on the kubelet cgroup`);
    }
    assert.ok(pinnedLayouts(w.pinPath).length > 0, `the maps stay pinned\n${log}`);
    assert.deepEqual(await kubeletLinks(), ["cgroup_inet4_connect", "cgroup_inet6_connect"], log);
  };
  const uidOf = async () =>
    (await apps.readNamespacedDaemonSet({ name: NAME, namespace: SYSTEM })).metadata!.uid!;

  await t.step(
    "stopped while its DaemonSet stands, the agent leaves the chain and the pins",
    async () => {
      const agent = await startAgent();
      const status = await agent.stop("SIGTERM");
      const log = agent.logs.join("\n");
      assert.match(Deno.readTextFileSync(conflist), /"type": "lace"/, log);
      await assertInPlace(log);
      assert.doesNotMatch(log, /removing its pins/);
      assert.equal(status.code, 0, log);
    },
  );

  await t.step(
    "deleted with --cascade=orphan and created again, the DaemonSet's agent stops leaving the chain and the pins",
    async () => {
      const agent = await startAgent();
      const before = await uidOf();
      await apps.deleteNamespacedDaemonSet({
        name: NAME,
        namespace: SYSTEM,
        propagationPolicy: "Orphan",
      });
      await logged(
        agent,
        /DaemonSet \W{0,3}lace\W{0,3} is being deleted/,
        "the agent to see the deletion",
      );
      // The garbage collector's part: it orphans the pods, then drops its finalizer.
      await apps.patchNamespacedDaemonSet(
        { name: NAME, namespace: SYSTEM, body: { metadata: { finalizers: null } } },
        setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
      );
      await waitFor(() => uidOf().then(() => false, (e) => apiStatus(e) === 404), {
        message: "the orphaned DaemonSet to be gone",
      });
      await apps.createNamespacedDaemonSet({
        namespace: SYSTEM,
        body: structuredClone(daemonSet) as V1DaemonSet,
      });
      assert.notEqual(await uidOf(), before, "a new uid");
      const status = await agent.stop("SIGTERM");
      const log = agent.logs.join("\n");
      assert.match(Deno.readTextFileSync(conflist), /"type": "lace"/, log);
      assert.match(log, /the lace plugin stays chained/);
      assert.doesNotMatch(log, /restoring the CNI configuration/);
      await assertInPlace(log);
      assert.doesNotMatch(log, /removing its pins/);
      assert.equal(status.code, 0, log);
    },
  );

  await t.step(
    "deleted for good with a pin path others may write, the agent keeps the pins and exits 1 saying why",
    async () => {
      const agent = await startAgent();
      await apps.deleteNamespacedDaemonSet({ name: NAME, namespace: SYSTEM });
      await logged(
        agent,
        /DaemonSet \W{0,3}lace\W{0,3} is being deleted/,
        "the agent to see the deletion",
      );
      // Someone else could have put another program's pins of Lace's names there.
      await Deno.chmod(w.pinPath, 0o777);
      try {
        const status = await agent.stop("SIGTERM");
        const log = agent.logs.join("\n");
        assert.equal(Deno.readTextFileSync(conflist), FLANNEL, log);
        assert.match(log, /Lace's pins were not removed: Pin path .*writable.*run lace uninstall/);
        await assertInPlace(log);
        assert.equal(status.code, 1, log);
      } finally {
        await Deno.chmod(w.pinPath, 0o700);
      }
      await waitFor(() => uidOf().then(() => false, (e) => apiStatus(e) === 404), {
        message: "the DaemonSet to be gone",
      });
      await apps.createNamespacedDaemonSet({
        namespace: SYSTEM,
        body: structuredClone(daemonSet) as V1DaemonSet,
      });
    },
  );

  await t.step(
    "deleted for good, an agent without CNI chaining removes its pins too",
    async () => {
      const agent = w.startAgent([`--kubeconfig=${kubeconfig}`, `--daemonset=${SYSTEM}/${NAME}`]);
      await agent.ready(60_000);
      await assertInPlace(agent.logs.join("\n"));
      await apps.deleteNamespacedDaemonSet({ name: NAME, namespace: SYSTEM });
      await logged(
        agent,
        /DaemonSet \W{0,3}lace\W{0,3} is being deleted/,
        "the agent to see the deletion",
      );
      const status = await agent.stop("SIGTERM");
      const log = agent.logs.join("\n");
      assert.deepEqual(await kubeletLinks(), [], `no link left on the kubelet cgroup\n${log}`);
      assert.throws(() => Deno.statSync(w.pinPath), Deno.errors.NotFound, log);
      assert.equal(status.code, 0, log);
      await waitFor(() => uidOf().then(() => false, (e) => apiStatus(e) === 404), {
        message: "the DaemonSet to be gone",
      });
      await apps.createNamespacedDaemonSet({
        namespace: SYSTEM,
        body: structuredClone(daemonSet) as V1DaemonSet,
      });
    },
  );

  await t.step(
    "deleted for good, its Role gone before SIGTERM, the agent restores the file byte for byte and removes its pins, its links detached",
    async () => {
      const agent = await startAgent();
      await apps.deleteNamespacedDaemonSet({ name: NAME, namespace: SYSTEM });
      await logged(
        agent,
        /DaemonSet \W{0,3}lace\W{0,3} is being deleted/,
        "the agent to see the deletion",
      );
      // helm uninstall removes the Role right after the DaemonSet: the last GET is refused.
      const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
      await rbac.deleteNamespacedRoleBinding({ name: NAME, namespace: SYSTEM });
      await rbac.deleteNamespacedRole({ name: NAME, namespace: SYSTEM });
      await waitFor(
        () =>
          asAgent.makeApiClient(AppsV1Api).readNamespacedDaemonSet({
            name: NAME,
            namespace: SYSTEM,
          }).then(() => false, (e) => apiStatus(e) === 403),
        { message: "the agent's GET of its DaemonSet to be refused" },
      );
      const status = await agent.stop("SIGTERM");
      const log = agent.logs.join("\n");
      assert.equal(Deno.readTextFileSync(conflist), FLANNEL, log);
      assert.match(log, /restoring the CNI configuration/);
      assert.deepEqual(await kubeletLinks(), [], `no link left on the kubelet cgroup\n${log}`);
      assert.throws(() => Deno.statSync(w.pinPath), Deno.errors.NotFound, log);
      assert.match(log, /removing its pins/);
      assert.equal(status.code, 0, log);
    },
  );
});
