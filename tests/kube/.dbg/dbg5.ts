import { CoreV1Api } from "@kubernetes/client-node";
import { startControlPlane } from "../fixture.ts";
import { applyObjects, helmTemplate } from "../helm.ts";
await using cp = await startControlPlane();
const core = cp.adminConfig().makeApiClient(CoreV1Api);
await cp.createNamespace("e");
try {
  await core.createNamespacedEvent({
    namespace: "e",
    body: {
      metadata: { name: "d" },
      involvedObject: { kind: "Pod", namespace: "e", name: "w" },
      reason: "R",
      message: "m",
      type: "Normal",
      eventTime: new Date(),
      action: "A",
      reportingComponent: "lace",
      reportingInstance: "i",
    },
  });
} catch (e) {
  console.log("plain date:", e.code, e.body);
}
try {
  await core.createNamespacedPod({
    namespace: "e",
    body: { metadata: { name: "p" }, spec: { containers: [{ name: "a", image: "x" }] } },
  });
  console.log("pod without default SA admitted");
} catch (e) {
  console.log("pod:", e.code, e.body);
}
await core.createNamespace({ body: { metadata: { name: "nosa" } } });
try {
  await core.createNamespacedPod({
    namespace: "nosa",
    body: { metadata: { name: "p" }, spec: { containers: [{ name: "a", image: "x" }] } },
  });
  console.log("pod without default SA admitted");
} catch (e) {
  console.log("pod in ns without default SA:", e.code, e.body);
}
const objs = await helmTemplate();
console.log(objs.map((o) => `${o.kind}/${o.metadata?.name}`).join(" "));
await cp.createNamespace("lace-system");
try {
  await applyObjects(cp.adminConfig(), objs, "lace-system");
  console.log("whole chart applied");
} catch (e) {
  console.log(String(e));
}
await new Promise((r) => setTimeout(r, 1000));
try {
  await core.createNamespacedPod({
    namespace: "e",
    dryRun: "All",
    body: {
      metadata: { name: "p" },
      spec: {
        containers: [{
          name: "a",
          image: "x",
          livenessProbe: { tcpSocket: { host: "1.2.3.4", port: 1 } },
        }],
      },
    },
  });
} catch (e) {
  console.log("vap:", e.code, e.body);
}
