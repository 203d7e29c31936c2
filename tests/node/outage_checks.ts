/**
 * The real-node steps where a part restarts or goes away for a while (the agent pod, the agent's
 * release, the kubelet, the API server): no probe fails meanwhile and new pods become Ready after.
 */
import assert from "node:assert/strict";
import type { LaceNode } from "./lace_node.ts";
import {
  assertProbedThroughout,
  failedProbes,
  kubeletPrograms,
  newPodBecomesReady,
  ownProbes,
  ownProbesOf,
  readyAgentPod,
} from "./pod_checks.ts";
import { PROBE_NAMESPACE } from "./probe_pods.ts";
import { waitFor } from "../helpers/wait.ts";

/** The agent pod deleted: the DaemonSet's new one is Ready, no probe failed, a new pod is Ready. */
export async function agentPodReplaced({ node, core }: LaceNode): Promise<void> {
  const old = await readyAgentPod(core, node);
  await core.deleteNamespacedPod({ name: old.metadata!.name!, namespace: "lace-system" });
  await readyAgentPod(core, node, old.metadata!.uid);
  assert.deepEqual(await failedProbes(core), []);
  await newPodBecomesReady(core, node, "after-agent-restart", 0, "after agent restart");
}

/** An upgrade to the variant image replaces each kubelet program in place, pods probed throughout. */
export async function upgradeSwapsPrograms({ node, core, upgrade }: LaceNode): Promise<void> {
  const old = await readyAgentPod(core, node);
  const programs = await kubeletPrograms(node);
  const pods = (await core.listNamespacedPod({ namespace: PROBE_NAMESPACE })).items;
  const served = () => Promise.all(pods.map((pod) => ownProbesOf(node, pod)));
  const before = await served();
  const began = performance.now();
  // Another image whose BPF object has other instructions (images.ts LACE_VARIANT_IMAGE).
  await upgrade("--set", "image.tag=variant");
  await readyAgentPod(core, node, old.metadata!.uid);
  const swapped = await kubeletPrograms(node);
  const seconds = (performance.now() - began) / 1000;
  const counts = assertProbedThroughout(pods, before, await served(), seconds);
  console.log(
    `chart upgrade to the variant object in ${seconds.toFixed(1)} s: programs ` +
      `${JSON.stringify(programs)} -> ${JSON.stringify(swapped)}; probes served ` +
      JSON.stringify(counts),
  );
  for (const type of ["cgroup_inet4_connect", "cgroup_inet6_connect"]) {
    assert.ok(programs[type] && swapped[type], `no ${type} program on the kubelet's cgroup`);
    assert.notEqual(swapped[type].id, programs[type].id, `${type} was not replaced`);
    assert.notEqual(swapped[type].tag, programs[type].tag, `${type} runs the same code`);
  }
  // In place: still one program of each type, none detached and attached again.
  assert.equal(Object.keys(swapped).length, Object.keys(programs).length);
  assert.deepEqual(await failedProbes(core), []);
  await newPodBecomesReady(core, node, "after-upgrade", 1, "after chart upgrade");
}

/** The kubelet restarted in a new cgroup probes again, no probe failed, a new pod is Ready. */
export async function kubeletRestartKeepsProbing({ node, core }: LaceNode): Promise<void> {
  const before = await ownProbes(node, core, "lace-red");
  await node.restartKubelet();
  // Probes resumed: the restarted kubelet reached the pod again, more than once.
  await waitFor(async () => (await ownProbes(node, core, "lace-red")) >= before + 3, {
    timeout: 60_000,
    interval: 250,
    message: "the restarted kubelet to probe again",
  });
  assert.deepEqual(await failedProbes(core), []);
  await newPodBecomesReady(core, node, "after-kubelet-restart", 2, "after kubelet restart");
}

/** The API server stopped for 30 s: every pod served its probes throughout, a new pod is Ready after. */
export async function apiOutageKeepsProbing({ node, core }: LaceNode): Promise<void> {
  // Failed probes cannot be reported while the API server is down (the kubelet sends the
  // Events later, or not at all): count what each pod served instead. Every readiness probe
  // that reached its pod is logged; one per second is the period.
  const pods = (await core.listNamespacedPod({ namespace: PROBE_NAMESPACE })).items;
  const served = () => Promise.all(pods.map((pod) => ownProbesOf(node, pod)));
  const before = await served();
  const outage = performance.now();
  await node.controlPlane.stopApiServer();
  // 30 s, thirty periods of the probes; what the outage must not cause is checked after.
  await new Promise((resolve) => setTimeout(resolve, 30_000));
  await node.controlPlane.startApiServer();
  const seconds = (performance.now() - outage) / 1000;
  const counts = assertProbedThroughout(pods, before, await served(), seconds);
  console.log(
    `probes served in ${seconds.toFixed(1)} s of API outage: ${JSON.stringify(counts)}`,
  );
  assert.deepEqual(await failedProbes(core), []);
  await newPodBecomesReady(core, node, "after-api-outage", 0, "after API outage");
}
