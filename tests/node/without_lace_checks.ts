/**
 * The real-node steps with part of Lace missing (the chained CNI plugin, the agent for a while,
 * then the whole chart): what still becomes Ready, what waits for the agent, and what never does.
 */
import type { V1Pod } from "@kubernetes/client-node";
import assert from "node:assert/strict";
import { join } from "node:path";
import type { TargetView } from "../../lib/agent_api/views.ts";
import { removeLace } from "./chart.ts";
import type { LaceNode } from "./lace_node.ts";
import { unchainLace } from "./net_plugin_setup.ts";
import { NETWORKS } from "./network.ts";
import {
  agentLog,
  agentTargets,
  createProbePods,
  deletePods,
  failedProbes,
  isReady,
  readyAgentPod,
  restarts,
} from "./pod_checks.ts";
import { PROBE_NAMESPACE, probePod } from "./probe_pods.ts";
import { waitFor } from "../helpers/wait.ts";

/** The pod made while the agent is away, whose targets a later step sees removed. */
const WHILE_AGENT_DOWN = "while-agent-down";

/** Pods by name, phase and whether they are being deleted, for a wait's failure. */
function podsText(pods: V1Pod[]): string {
  return pods.map((p) =>
    `${p.metadata?.name} ${p.status?.phase}${p.metadata?.deletionTimestamp ? " terminating" : ""}`
  ).join(", ");
}

/** With Lace out of the CNI chain a new pod is Ready, the agent learning it from the API only. */
export async function readyWithoutChainedPlugin(
  { node, core, onFailure }: LaceNode,
): Promise<void> {
  // The agent then learns the pod's address only when the kubelet reports it to the API
  // server; the kubelet may probe before that, and such probes fail (Unhealthy events).
  const namespace = "probes-api-only";
  await node.controlPlane.createNamespace(namespace);
  const restore = await unchainLace(join(node.dir, "net.d"));
  const name = "api-only";
  const began = performance.now();
  try {
    const body = probePod({
      name,
      node: node.name,
      network: NETWORKS[1].name,
      portOffset: 100,
    });
    body.metadata!.namespace = namespace;
    await core.createNamespacedPod({ namespace, body });
    await waitFor(async () => isReady(await core.readNamespacedPod({ name, namespace })), {
      timeout: 120_000,
      interval: 250,
      message: `pod ${name} to be Ready`,
    }).catch(onFailure);
  } finally {
    await restore();
  }
  const readyMs = Math.round(performance.now() - began);
  // The measurement is only honest if the plugin really was out of the chain.
  assert.doesNotMatch(await agentLog(node), new RegExp(`CNI ADD registered ..${namespace}/`));
  const events = await core.listNamespacedEvent({ namespace });
  const failed = events.items.filter((e) => e.reason === "Unhealthy")
    .reduce((sum, e) => sum + (e.count ?? 1), 0);
  console.log(
    `creation to Ready without the CNI path: ${readyMs} ms, ${failed} failed probes before ` +
      `(with it: the steps above and below, no failed probe)`,
  );
  assert.deepEqual(await failedProbes(core), [], "the other pods were not disturbed");
  await core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: 0 });
}

/** A pod made with the agent off the node fails its probes, then is Ready once the agent is back. */
export async function readyOnceAgentBack({ node, core, upgrade }: LaceNode): Promise<void> {
  await upgrade("--set", "nodeSelector.lace-test/agent=off");
  await waitFor(async () => {
    const list = await core.listNamespacedPod({ namespace: "lace-system" });
    // Thrown, so a timeout names the pods still there.
    if (list.items.length) throw new Error(`left: ${podsText(list.items)}`);
    return true;
  }, { timeout: 60_000, interval: 250, message: "the agent pod to be gone" });
  const name = WHILE_AGENT_DOWN;
  await core.createNamespacedPod({
    namespace: PROBE_NAMESPACE,
    body: probePod({ name, node: node.name, network: NETWORKS[2].name, portOffset: 200 }),
  });
  // Probed and failing: the kubelet's connections to it are not tagged.
  await waitFor(async () => {
    const failures = await failedProbes(core);
    return failures.some((f) => f.startsWith(`${name}:`));
  }, { timeout: 60_000, interval: 250, message: "the pod's first failed probe" });
  const back = performance.now();
  await upgrade();
  await readyAgentPod(core, node);
  await waitFor(async () => {
    return isReady(await core.readNamespacedPod({ name, namespace: PROBE_NAMESPACE }));
  }, { timeout: 60_000, interval: 250, message: `pod ${name} to be Ready` });
  console.log(
    `pod made while the agent was down: Ready ${
      Math.round(performance.now() - back)
    } ms after the agent came back`,
  );
  assert.deepEqual(await failedProbes(core, new Set([name])), []);
}

/** Deleting the pod readyOnceAgentBack made takes its targets out of the agent's map. */
export async function deletedPodTargetsRemoved({ node, core }: LaceNode): Promise<void> {
  const name = WHILE_AGENT_DOWN;
  const owned = (targets: TargetView[]) =>
    targets.some((t) => t.pod === `${PROBE_NAMESPACE}/${name}`);
  const before = await agentTargets(node);
  assert.ok(owned(before), JSON.stringify(before));
  await core.deleteNamespacedPod({ name, namespace: PROBE_NAMESPACE, gracePeriodSeconds: 0 });
  await waitFor(async () => !owned(await agentTargets(node)), {
    timeout: 30_000,
    interval: 250,
    message: "its targets to go",
  });
}

/** Lace removed: the same probe pods never become Ready and liveness restarts them. */
export async function neverReadyWithoutAgent({ node, core, onFailure }: LaceNode): Promise<void> {
  const old = await core.listNamespacedPod({ namespace: PROBE_NAMESPACE });
  await deletePods(core, old.items.map((p) => p.metadata!.name!));
  await removeLace(node);
  const created = new Map([
    ...await createProbePods(core, node, "control"),
    ...await createProbePods(core, node, "control6", "ipv6"),
  ]);
  // Every sample is kept: an assertion inside waitFor would only count as "not yet".
  const everReady = new Set<string>();
  const restarted = await waitFor(async () => {
    const list = await core.listNamespacedPod({ namespace: PROBE_NAMESPACE });
    for (const pod of list.items.filter(isReady)) everReady.add(pod.metadata!.name!);
    return list.items.length === created.size && list.items.every((p) => restarts(p) > 0)
      ? list.items
      : undefined;
  }, { timeout: 60_000, interval: 250, message: "liveness to restart the control pods" }).catch(
    onFailure,
  );
  assert.deepEqual([...everReady], [], "pods became Ready without the agent");
  console.log(
    `without Lace: no pod Ready, restarts ${
      JSON.stringify(Object.fromEntries(restarted.map((p) => [p.metadata!.name, restarts(p)])))
    }`,
  );
  await deletePods(core, created.keys());
}
