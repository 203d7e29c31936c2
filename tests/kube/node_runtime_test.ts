/**
 * The chaining's runtime comes from the Node: the agent, as the chart's ServiceAccount against
 * the real kube-apiserver, reads its Node's status.nodeInfo.containerRuntimeVersion (the chart's
 * ClusterRole grants get on nodes), which picks the rule of the file it chains.
 */
import assert from "node:assert/strict";
import { CoreV1Api } from "@kubernetes/client-node";
import { defaultConfig } from "../../lib/config.ts";
import { clusterParts } from "../../lib/agent/cluster_parts.ts";
import { CleanupStack } from "../../lib/os/cleanup_stack.ts";
import { runtimeOfVersion } from "../../lib/cni/chaining/runtimes.ts";
import { waitFor } from "../helpers/wait.ts";
import { startControlPlane } from "./fixture.ts";
import { applyObjects, helmTemplate } from "./helm.ts";
import { chartOnControlPlaneUnavailableReason, controlPlaneTestOptions } from "./tools.ts";

const unavailable = await chartOnControlPlaneUnavailableReason();
const SYSTEM = "lace-system";
const NODE = "runtime-node";

Deno.test({
  name: "the agent reads its Node's container runtime as the chart's ServiceAccount",
  ...controlPlaneTestOptions(unavailable),
}, async () => {
  await using cp = await startControlPlane();
  const admin = cp.adminConfig();
  const core = admin.makeApiClient(CoreV1Api);
  await cp.createNamespace(SYSTEM);
  await applyObjects(admin, await helmTemplate({ namespace: SYSTEM }), SYSTEM);
  await core.createNode({ body: { metadata: { name: NODE } } });
  // What the kubelet reports in its status (the status subresource; a create drops it).
  await core.patchNodeStatus({
    name: NODE,
    body: [{
      op: "add",
      path: "/status/nodeInfo",
      value: {
        machineID: "",
        systemUUID: "",
        bootID: "",
        kernelVersion: "",
        osImage: "",
        containerRuntimeVersion: "cri-o://1.33.2",
        kubeletVersion: "",
        kubeProxyVersion: "",
        operatingSystem: "linux",
        architecture: "amd64",
      },
    }],
  });
  const kubeconfig = await cp.writeKubeconfigForToken(
    await cp.serviceAccountToken(SYSTEM, "lace"),
    "lace",
  );
  const parts = new CleanupStack("test");
  try {
    const { readRuntimeVersion } = await clusterParts(
      { ...defaultConfig(), kubeconfig, nodeName: NODE, cniSocket: "" },
      parts,
      { onWatchRestart: () => {}, onEventDrop: () => {} },
    );
    assert.ok(readRuntimeVersion, "a Node to read with the API and a node name");
    // The chart's ClusterRole binding reaches the authorizer shortly after it is applied.
    const version = await waitFor(() => readRuntimeVersion(), {
      timeout: 15_000,
      message: "the Node's containerRuntimeVersion",
    });
    assert.equal(version, "cri-o://1.33.2");
    assert.equal(runtimeOfVersion(version), "crio");
  } finally {
    await parts.run();
  }
});
