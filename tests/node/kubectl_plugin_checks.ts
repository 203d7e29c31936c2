/**
 * The real-node step of kubectl lace: through the API it finds the node's agent pod and runs
 * targets and doctor pod there, names a node without an agent, and names the verb RBAC refuses.
 */
import assert from "node:assert/strict";
import type { TargetView } from "../../lib/agent_api/views.ts";
import { kubectlLace, readOnlyKubeconfig } from "./kubectl_plugin.ts";
import type { LaceNode } from "./lace_node.ts";
import { NETWORKS } from "./network.ts";
import { agentTargets } from "./pod_checks.ts";
import { PROBE_NAMESPACE } from "./probe_pods.ts";

/** kubectl lace targets and doctor pod as the admin, on a missing node and as a reader. */
export async function pluginReachesAgent({ node }: LaceNode): Promise<void> {
  const admin = node.controlPlane.kubeconfigPath;
  const began = performance.now();
  const targets = await kubectlLace(node, admin, [
    "lace",
    "targets",
    "--node",
    node.name,
    "-o",
    "json",
  ]);
  console.log(`kubectl lace targets took ${Math.round(performance.now() - began)} ms`);
  assert.equal(targets.code, 0, targets.stderr);
  const viaPlugin = JSON.parse(targets.stdout) as TargetView[];
  const onNode = await agentTargets(node);
  // The map's keys and marks: pods are named only when the agent answers its socket within
  // the second lace targets waits, else it reads the pinned map (no pods), which a loaded
  // machine sees.
  const key = (t: TargetView) => `${t.family} ${t.address} ${t.port} ${t.mark}`;
  assert.deepEqual(viaPlugin.map(key).sort(), onNode.map(key).sort());
  assert.ok(viaPlugin.length > 0);

  // doctor pod without --node: the plugin reads the pod's node from the API.
  const pod = `${PROBE_NAMESPACE}/lace-${NETWORKS[0].name}`;
  const doctor = await kubectlLace(node, admin, ["lace", "doctor", "pod", pod]);
  // Each of its targets probed now from the kubelet's cgroup, by the agent in its pod.
  assert.equal(doctor.code, 0, `${doctor.stdout}${doctor.stderr}`);
  assert.match(doctor.stdout, new RegExp(`Pod ${pod}: `));
  assert.match(doctor.stdout, /reached/);
  assert.doesNotMatch(doctor.stdout, /TIMEOUT|REFUSED|NO_ROUTE/);

  const nowhere = await kubectlLace(node, admin, ["lace", "targets", "--node", "no-such-node"]);
  assert.equal(nowhere.code, 1);
  assert.match(nowhere.stderr, /no Lace agent pod on node "no-such-node"/);

  // Read-only access: the pod is found, the exec is refused, and the error names the verb.
  const reader = await readOnlyKubeconfig(node, "lace-system");
  const refused = await kubectlLace(node, reader, ["lace", "targets", "--node", node.name]);
  assert.equal(refused.code, 1, refused.stdout);
  assert.match(refused.stderr, /RBAC must let you create pods\/exec/);
}
