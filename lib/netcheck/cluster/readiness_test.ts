import assert from "node:assert/strict";
import type { ProbePod } from "./netcheck_cluster.ts";
import { SetupError } from "./errors.ts";
import { podState, waitForProbePods } from "./readiness.ts";
import { fakeNodes, MemoryCluster } from "../../../tests/netcheck/memory_cluster.ts";
import { onFakeTime } from "../../../tests/netcheck/run_fixture.ts";
import { fakeTime } from "../../../tests/helpers/fake_time.ts";

const pod = (over: Partial<ProbePod>): ProbePod => ({
  name: "p",
  nodeName: "n",
  phase: "Running",
  ready: true,
  podIPs: ["10.0.0.1"],
  unschedulable: false,
  containerReasons: {},
  ...over,
});

Deno.test("podState() classifies ready, skipped, fatal and starting pods", () => {
  assert.deepEqual(podState(pod({})), { kind: "ready" });
  assert.equal(
    podState(pod({ phase: "Pending", ready: false, unschedulable: true })).kind,
    "skipped",
  );
  for (
    const reason of [
      "ErrImagePull",
      "CrashLoopBackOff",
      "CreateContainerConfigError",
      "InvalidImageName",
    ]
  ) {
    assert.equal(
      podState(pod({ ready: false, containerReasons: { bandwidth: reason } })).kind,
      "fatal",
    );
  }
  assert.equal(
    podState(pod({ phase: "Pending", ready: false, containerReasons: { c: "ContainerCreating" } }))
      .kind,
    "starting",
  );
});

Deno.test("waitForProbePods() polls until pods are ready, on fake time", async () => {
  const cluster = new MemoryCluster(fakeNodes(3), { readyAfterLists: 3 });
  await cluster.ensureNamespace("ns");
  await cluster.applyDaemonSet("ns", { metadata: { name: "ds" } });
  const { clock, timers } = fakeTime();
  const ready = await onFakeTime(
    clock,
    waitForProbePods(cluster, {
      namespace: "ns",
      daemonSet: "ds",
      selector: "",
      timeoutMs: 60_000,
      timers,
    }),
  );
  assert.equal(ready.ready.length, 3);
  // Three polls a second apart before the fourth list found them ready.
  assert.equal(clock.now, 3000);
});

Deno.test("waitForProbePods() gives up at the deadline naming the pods still starting", async () => {
  const nodes = fakeNodes(2);
  nodes[1].neverReady = true;
  const cluster = new MemoryCluster(nodes);
  await cluster.ensureNamespace("ns");
  await cluster.applyDaemonSet("ns", { metadata: { name: "ds" } });
  const { clock, timers } = fakeTime();
  await assert.rejects(
    onFakeTime(
      clock,
      waitForProbePods(cluster, {
        namespace: "ns",
        daemonSet: "ds",
        selector: "",
        timeoutMs: 10_000,
        timers,
      }),
    ),
    (e: Error) => {
      assert.ok(e instanceof SetupError);
      assert.match(e.message, /not ready within 10s: still starting: ds-node-0001 on node-0001/);
      return true;
    },
  );
});
