/**
 * The real-node steps through helm: install brings up a Ready agent with the CNI plugin, helm test
 * passes on an attached agent and fails naming the node and why on a detached one.
 */
import assert from "node:assert/strict";
import { helmTest, installLace } from "./chart.ts";
import { laceLauncher } from "./images.ts";
import type { LaceNode } from "./lace_node.ts";
import { containerLog, isReady } from "./pod_checks.ts";
import { waitFor } from "../helpers/wait.ts";

/** helm install with `values`: the DaemonSet's pod is Ready and has installed the lace launcher. */
export async function installBringsUpAgent(
  { node, core, apps, onFailure }: LaceNode,
  values: string[],
): Promise<void> {
  const began = performance.now();
  await installLace(node, ...values);
  const ds = await apps.readNamespacedDaemonSet({ name: "lace", namespace: "lace-system" });
  assert.equal(ds.spec?.template.spec?.containers[0].image, "lace.test/lace:dev");
  const pod = await waitFor(async () => {
    const list = await core.listNamespacedPod({ namespace: "lace-system" });
    return list.items.find((p) => p.spec?.nodeName === node.name && isReady(p));
  }, { timeout: 120_000, interval: 250, message: "the agent pod to be Ready" }).catch(
    onFailure,
  );
  console.log(`agent pod Ready ${Math.round(performance.now() - began)} ms after helm install`);
  assert.equal(pod.metadata?.ownerReferences?.[0]?.kind, "DaemonSet");
  const installed = await node.exec(["cat", "/opt/cni/bin/lace"]);
  assert.equal(installed, laceLauncher(), "the init container installed the lace launcher");
}

/** helm test succeeds on an attached, ready agent and its pod is deleted after. */
export async function helmTestPasses({ node, core }: LaceNode): Promise<void> {
  const began = performance.now();
  const run = await helmTest(node);
  assert.ok(run.success, run.text);
  assert.match(run.text, /TEST SUITE:\s+lace-test[\s\S]*Phase:\s+Succeeded/);
  console.log(`helm test passed in ${Math.round(performance.now() - began)} ms`);
  await waitFor(async () => {
    const list = await core.listNamespacedPod({ namespace: "lace-system" });
    return !list.items.some((p) => p.metadata?.name === "lace-test");
  }, { timeout: 30_000, interval: 250, message: "the passed test's pod to be deleted" });
}

/** An agent told a kubelet cgroup that does not exist: helm test fails, its log names the node. */
export async function helmTestNamesDetachedNode({ node, core, upgrade }: LaceNode): Promise<void> {
  // A kubelet cgroup that does not exist: the new agent runs but attaches nowhere.
  const missing = "/sys/fs/cgroup/lace-test-no-kubelet";
  await upgrade("--set", `node.kubeletCgroupPath=${missing}`, "--set", "tests.wait=5s");
  await waitFor(async () => {
    const list = await core.listNamespacedPod({ namespace: "lace-system" });
    return list.items.some((p) =>
      p.spec?.nodeName === node.name && !p.metadata?.deletionTimestamp &&
      p.spec.containers[0].env?.some((e) =>
        e.name === "LACE_KUBELET_CGROUP" && e.value === missing
      ) &&
      p.status?.containerStatuses?.[0]?.state?.running !== undefined
    );
  }, { timeout: 120_000, interval: 250, message: "the agent told that cgroup to run" });
  const run = await helmTest(node);
  try {
    assert.equal(run.success, false, run.text);
    assert.match(run.text, /pod lace-test failed/);
    // Its pod stays for kubectl logs; what lace status printed there (the runtime's log
    // lines without their time and stream):
    const pod = await core.readNamespacedPod({ name: "lace-test", namespace: "lace-system" });
    assert.equal(pod.status?.phase, "Failed");
    const log = (await containerLog(node, pod, "status"))
      .replace(/^\S+ std(?:out|err) [FP] /gm, "");
    console.log(`helm test on a detached agent:\n${log}`);
    assert.match(
      log,
      new RegExp(
        `^${node.name}\\s+lace-\\S+\\s+no\\s+-\\s+the pod is not Ready.*not ready: .*not attached`,
        "m",
      ),
    );
    assert.match(
      log,
      /^Not every node's agent is attached and ready: 1 of 1 agent pods failing/m,
    );
  } finally {
    // The next step takes Lace off the node, which waits for lace-system to be empty.
    await core.deleteNamespacedPod({
      name: "lace-test",
      namespace: "lace-system",
      gracePeriodSeconds: 0,
    }).catch(() => {});
  }
}
