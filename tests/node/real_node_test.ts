/**
 * Lace on a real node (tests/node/node.ts): the chart installed by the real helm, the agent
 * started by the real kubelet from the lace image, and the kubelet's own probes of pods in three
 * isolated networks that share their addresses. The node is brought up once for the file; each
 * step shows one behaviour, in the order a user meets them. Prints what it measured.
 */
import { nodeUnavailableReason } from "../kube/tools.ts";
import { HAND_CHAINED } from "./chart.ts";
import { startNode } from "./node.ts";
import { skipIf } from "../helpers/skip.ts";
import { laceNode } from "./lace_node.ts";
import { helmTestNamesDetachedNode, helmTestPasses, installBringsUpAgent } from "./helm_checks.ts";
import { onlyKubeletReachesPods, sharedAddressesAnswerOwnProbes } from "./isolation_checks.ts";
import { pluginReachesAgent } from "./kubectl_plugin_checks.ts";
import {
  agentPodReplaced,
  apiOutageKeepsProbing,
  kubeletRestartKeepsProbing,
  upgradeSwapsPrograms,
} from "./outage_checks.ts";
import {
  deletedPodTargetsRemoved,
  neverReadyWithoutAgent,
  readyOnceAgentBack,
  readyWithoutChainedPlugin,
} from "./without_lace_checks.ts";

const reason = await nodeUnavailableReason();
Deno.test({
  name:
    "Lace on a real node: the chart's agent makes the kubelet's probes reach pods in isolated networks",
  ignore: skipIf(reason),
  sanitizeOps: false,
  sanitizeResources: false,
}, async (t) => {
  const start = performance.now();
  // kubeletApi: the API server reaches the kubelet, for kubectl lace's exec.
  await using node = await startNode({
    laceVariant: true,
    podsReachNode: true,
    kubeletApi: true,
    sharedAddresses: true,
  });
  console.log(
    `node up in ${Math.round(performance.now() - start)} ms: ${JSON.stringify(node.timings)}`,
  );

  // Three networks give their pods the same addresses on this one node, which the default
  // (one network per address, node.addressSharing=exclusive) refuses: the opt-in runs here
  // (tests/node/isolation_node_test.ts shows both).
  // helm test's pod joins network red (the node's network plugin attaches pods by this label) at
  // its last host number, from which the network's round-robin wraps to where it was: the later
  // pods get the addresses they got without it.
  const values = [
    ...HAND_CHAINED,
    "--set",
    "node.addressSharing=shared",
    "--set-string",
    "tests.podLabels.lace-test\\.io/network=red",
    "--set-string",
    "tests.podLabels.lace-test\\.io/host-index=250",
  ];
  const lace = laceNode(node, values);

  await t.step(
    "helm install brings up the agent's DaemonSet pod, Ready, with the CNI plugin installed",
    () => installBringsUpAgent(lace, values),
  );

  await t.step(
    "pods in three networks sharing their addresses pass every probe over IPv4 and IPv6, each answered by its own pod",
    () => sharedAddressesAnswerOwnProbes(lace),
  );

  await t.step(
    "helm test passes when every node's agent is attached and ready, and leaves no pod behind",
    () => helmTestPasses(lace),
  );

  await t.step(
    "kubectl lace finds the node's agent pod through the API and runs targets and doctor pod there",
    () => pluginReachesAgent(lace),
  );

  await t.step(
    "without the chained plugin a new pod still becomes Ready, from the API's pod status alone",
    () => readyWithoutChainedPlugin(lace),
  );

  await t.step(
    "other processes on the node reach none of the pods' addresses, which the same command in the kubelet's cgroup reaches",
    () => onlyKubeletReachesPods(lace),
  );

  await t.step(
    "deleting the agent pod: the DaemonSet brings it back, no probe fails, new pods become Ready",
    () => agentPodReplaced(lace),
  );

  await t.step(
    "a chart upgrade to another release swaps the kubelet's programs in place without a failed probe",
    () => upgradeSwapsPrograms(lace),
  );

  await t.step(
    "a kubelet restarted in a new cgroup keeps probing through Lace without a failure",
    () => kubeletRestartKeepsProbing(lace),
  );

  await t.step(
    "the API server stopped for 30 s: no probe fails, and new pods become Ready after",
    () => apiOutageKeepsProbing(lace),
  );

  await t.step(
    "a pod created while the agent is down becomes Ready once it is back",
    () => readyOnceAgentBack(lace),
  );

  await t.step("a deleted pod's targets are removed", () => deletedPodTargetsRemoved(lace));

  await t.step(
    "helm test fails naming the node and why when its agent is not attached",
    () => helmTestNamesDetachedNode(lace),
  );

  await t.step(
    "without the agent the same pods never become Ready and liveness restarts them",
    () => neverReadyWithoutAgent(lace),
  );
});
