import { CoreV1Api, PatchStrategy, setHeaderOptions, V1MicroTime } from "@kubernetes/client-node";
import { startControlPlane } from "../fixture.ts";
const cp = await startControlPlane();
try {
  const core = cp.adminConfig().makeApiClient(CoreV1Api);
  await cp.createNamespace("status");
  await core.createNamespacedPod({
    namespace: "status",
    body: {
      metadata: { name: "web" },
      spec: { nodeName: "node-a", containers: [{ name: "app", image: "x" }] },
    },
  });
  try {
    const p = await core.patchNamespacedPodStatus({
      namespace: "status",
      name: "web",
      body: { status: { phase: "Running", podIP: "10.20.0.5", podIPs: [{ ip: "10.20.0.5" }] } },
    }, setHeaderOptions("Content-Type", PatchStrategy.MergePatch));
    console.log("patched", JSON.stringify(p.status));
  } catch (e) {
    console.log("patch error", e.code, e.body ?? e);
  }
  const pod = await core.readNamespacedPod({ namespace: "status", name: "web" });
  console.log("read", JSON.stringify(pod.status));
  try {
    const ev = await core.createNamespacedEvent({
      namespace: "status",
      body: {
        metadata: { name: "micro" },
        involvedObject: { kind: "Pod", namespace: "status", name: "web", apiVersion: "v1" },
        reason: "ProbeTargetsAdded",
        message: "1 probe target",
        type: "Normal",
        eventTime: new V1MicroTime(),
        action: "Reconcile",
        reportingComponent: "lace",
        reportingInstance: "lace-node-a",
      },
    });
    console.log("event", ev.eventTime, typeof ev.eventTime, ev.eventTime instanceof Date);
  } catch (e) {
    console.log("event error", e.code, e.body ?? e);
  }
} finally {
  await cp.close();
}
