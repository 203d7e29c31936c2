/**
 * `lace agent` end to end against the real kube-apiserver and etcd: the chart rendered by helm
 * and applied to the server, the agent authenticated as the chart's ServiceAccount (a token from
 * the TokenRequest API, so the chart's RBAC is what it gets), running on the netns harness.
 * The test plays the kubelet: it creates pods with spec.nodeName and writes their podIPs through
 * the status subresource; the agent must turn them into probe targets the kubelet-cgroup prober
 * reaches in the right network, record its Events on the real server, and survive an API server
 * restart (the GOAWAY that crashed Deno's node:http2) and converge afterwards.
 */
import assert from "node:assert/strict";
import {
  CoreV1Api,
  type CoreV1Event,
  type KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1Pod,
} from "@kubernetes/client-node";
import { loadKubeConfig } from "../../lib/kube/client.ts";
import { readPinnedTargets } from "../../lib/datapath/pins.ts";
import { keyId } from "../../lib/probe/key.ts";
import {
  type AgentProcess,
  AgentWorld,
  POD_IPV4,
  POD_IPV6,
  podManifest,
} from "../helpers/agent_process.ts";
import { needsRoot } from "../helpers/skip.ts";
import { type ControlPlane, startControlPlane } from "./fixture.ts";
import { apiServerRolesApply, applyObjects, helmTemplate } from "./helm.ts";
import { controlPlaneTestOptions, controlPlaneUnavailableReason, helmAvailable } from "./tools.ts";
import { waitFor } from "../helpers/wait.ts";

async function unavailableReason(): Promise<string | undefined> {
  const privileged = needsRoot();
  if (privileged) return privileged;
  const reason = await controlPlaneUnavailableReason();
  if (reason) return reason;
  if (!(await helmAvailable())) return "helm is not built; run scripts/build_k8s_tools.sh";
  return undefined;
}

const unavailable = await unavailableReason();
if (unavailable) console.warn(`Skipping the agent's control-plane tests: ${unavailable}`);

const SYSTEM = "lace-system";
const NS = "e2e";
const NODE = "e2e-node";

type PodOptions = Parameters<typeof podManifest>[0];

/**
 * The harness's pod manifest as a client would create it: no uid, creation time or status
 * (the server sets those), and an image, which the server requires.
 */
function podBody(options: PodOptions): V1Pod {
  const pod = podManifest(options) as unknown as V1Pod;
  delete pod.status;
  delete pod.metadata!.uid;
  delete pod.metadata!.creationTimestamp;
  for (const container of pod.spec!.containers) container.image = "registry.invalid/app:1";
  return pod;
}

/** Creates the pod, then writes its addresses through the status subresource as a kubelet does. */
async function startPod(core: CoreV1Api, body: V1Pod, namespace = NS): Promise<V1Pod> {
  body.metadata!.namespace = namespace;
  const created = await core.createNamespacedPod({ namespace, body });
  return await core.patchNamespacedPodStatus(
    {
      namespace,
      name: created.metadata!.name!,
      body: {
        status: {
          phase: "Running",
          podIP: POD_IPV4,
          podIPs: [{ ip: POD_IPV4 }, { ip: POD_IPV6 }],
        },
      },
    },
    setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
  );
}

/** The Event of reason about the object name, once the agent has recorded it. */
function eventFor(
  core: CoreV1Api,
  namespace: string,
  name: string,
  reason: string,
): Promise<CoreV1Event> {
  return waitFor(async () => {
    const list = await core.listNamespacedEvent({
      namespace,
      fieldSelector: `involvedObject.name=${name},reason=${reason}`,
    });
    return list.items[0];
  }, { timeout: 15_000, message: `a ${reason} Event about "${name}"` });
}

/** Asserts the fields and timestamps of an Event the agent recorded, as the server stored it. */
function assertAgentEvent(event: CoreV1Event, since: number) {
  assert.equal(event.source?.component, "lace");
  assert.equal(event.source?.host, NODE);
  assert.equal(event.reportingInstance, NODE);
  assert.ok(event.reportingComponent, "reportingComponent is set");
  assert.ok((event.count ?? 0) >= 1);
  // The server keeps MicroTime as a string with 6 fractional digits; client-node leaves it so.
  assert.match(String(event.eventTime), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
  const now = Date.now();
  for (
    const [field, value] of [
      ["eventTime", Date.parse(String(event.eventTime))],
      ["firstTimestamp", event.firstTimestamp?.getTime()],
      ["lastTimestamp", event.lastTimestamp?.getTime()],
    ] as const
  ) {
    assert.ok(
      value !== undefined && value >= since - 2000 && value <= now + 2000,
      `${field} ${value} is not within this test's run`,
    );
  }
}

/** Targets in the pinned map as sorted "family/address/port → network" lines. */
function mapContents(pinPath: string): string[] {
  return readPinnedTargets(pinPath).map((e) => `${keyId(e.key)} → ${e.value.networkId}`).sort();
}

/** Deletes a key in etcd through its JSON gateway; returns how many keys went. */
async function etcdDelete(cp: ControlPlane, key: string): Promise<number> {
  const response = await fetch(`${cp.etcdUrl}/v3/kv/deleterange`, {
    method: "POST",
    body: JSON.stringify({ key: btoa(key) }),
  });
  if (!response.ok) throw new Error(`etcd deleterange "${key}": HTTP ${response.status}`);
  return Number((await response.json()).deleted ?? 0);
}

/** Waits until the service account's token lists pods: RBAC reaches the authorizer late. */
async function waitForRbac(config: KubeConfig) {
  const core = config.makeApiClient(CoreV1Api);
  await waitFor(async () => {
    await core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${NODE}`, limit: 1 });
    // And the Roles of the API server's addresses: each binding arrives on its own.
    await apiServerRolesApply(config);
    return true;
  }, { timeout: 15_000, message: "the chart's RBAC to take effect" });
}

/**
 * Log lines that show the agent refused by RBAC, outside `ignore` windows: a kube-apiserver
 * that is starting answers 403 until its RBAC caches are filled, whatever the RBAC says.
 */
const unsafeLines = (agent: AgentProcess, ignore: [number, number][] = []) =>
  agent.logs.filter((line) => {
    if (!/forbidden|HTTP-Code: 403|\b403 Forbidden\b/i.test(line)) return false;
    const at = Date.parse((/"@timestamp":"([^"]+)"/.exec(line) ?? [])[1] ?? "");
    return !ignore.some(([from, to]) => at >= from && at <= to);
  });

Deno.test({
  name: "lace agent follows the real API server as the chart's ServiceAccount",
  ...controlPlaneTestOptions(unavailable),
}, async (t) => {
  const started = Date.now();
  await using cp = await startControlPlane();
  const admin = cp.adminConfig();
  const core = admin.makeApiClient(CoreV1Api);
  await cp.createNamespace(SYSTEM);
  // The test's admin plays the network plugin, which writes the pods' network annotations.
  const chart = await helmTemplate({
    namespace: SYSTEM,
    set: ["admissionPolicy.networkAnnotationWriters={lace-test-admin}"],
  });
  await applyObjects(admin, chart, SYSTEM);
  const kubeconfig = await cp.writeKubeconfigForToken(
    await cp.serviceAccountToken(SYSTEM, "lace"),
    "lace",
  );
  await waitForRbac(loadKubeConfig({ kubeconfig }));
  await cp.createNamespace(NS);
  await core.createNode({ body: { metadata: { name: NODE } } });

  await using w = await AgentWorld.create();
  // The default liveness interval (30 s): the outage below must be noticed without it.
  const agent = w.startAgent([`--kubeconfig=${kubeconfig}`]);
  // A failure says what the agent and the servers logged.
  const withLogs = async (error: unknown): Promise<never> => {
    throw new Error(
      `${error instanceof Error ? error.message : error}\n--- agent log ---\n` +
        `${agent.logs.slice(-40).join("\n")}\n${await cp.logs(20)}`,
      { cause: error },
    );
  };
  const step = (name: string, fn: () => Promise<void> | void) =>
    t.step(name, async () => {
      try {
        await fn();
      } catch (error) {
        await withLogs(error);
      }
    });
  await agent.ready(30_000).catch(withLogs);

  await step("pods with podIPs in their status become targets in their network", async () => {
    await startPod(core, podBody({ name: "a", networkId: 1, httpPort: 8080, tcpPort: 9000 }));
    await startPod(core, podBody({ name: "b", networkId: 2, httpPort: 8081, tcpPort: 9001 }));
    await waitFor(async () =>
      (await w.probe(POD_IPV4, 8080, "/")).body === w.podIn(1) &&
      (await w.probe(POD_IPV6, 8081, "/")).body === w.podIn(2), {
      timeout: 10_000,
      message: "a and b reachable",
    });
    assert.equal((await w.probe(POD_IPV6, 8080, "/")).body, w.podIn(1));
    assert.equal((await w.probe(POD_IPV4, 9001)).result, "reached");
    assert.equal(mapContents(w.pinPath).length, 8, "2 pods × 2 families × 2 ports");
    // Only the kubelet's connections are tagged.
    assert.equal((await w.probe(POD_IPV4, 8080, "/", "other")).result, "NO_ROUTE");
  });

  await step("a pod deleted through the API loses its targets", async () => {
    await startPod(core, podBody({ name: "c", networkId: 2, httpPort: 8082, tcpPort: 9002 }));
    await waitFor(async () => (await w.probe(POD_IPV4, 9002)).result === "reached", {
      timeout: 10_000,
      message: "c reachable",
    });
    await core.deleteNamespacedPod({ namespace: NS, name: "c", gracePeriodSeconds: 0 });
    await waitFor(async () =>
      (await w.probe(POD_IPV4, 9002)).result === "NO_ROUTE" &&
      (await w.probe(POD_IPV6, 8082, "/")).result === "NO_ROUTE", {
      timeout: 10_000,
      message: "c's targets gone",
    });
    assert.equal(mapContents(w.pinPath).length, 8);
  });

  await step("an unresolvable named port is a Warning Event the server stores", async () => {
    const body = podBody({ name: "named", networkId: 1, httpPort: 8083, tcpPort: 9003 });
    body.spec!.containers[0].livenessProbe!.httpGet!.port = "metrics";
    const pod = await startPod(core, body);
    // The rest of the pod's probes still get their targets.
    await waitFor(async () => (await w.probe(POD_IPV4, 9003)).result === "reached", {
      timeout: 10_000,
      message: "named's tcp probe",
    });
    const event = await eventFor(core, NS, "named", "ProbeIgnored");
    assert.equal(event.type, "Warning");
    assert.equal(event.involvedObject.kind, "Pod");
    assert.equal(event.involvedObject.namespace, NS);
    assert.equal(event.involvedObject.uid, pod.metadata!.uid);
    assert.match(event.message ?? "", /metrics/);
    assertAgentEvent(event, started);
  });

  await step(
    "a pod of another network claiming a pod's port takes it from both, with Events",
    async () => {
      await startPod(core, podBody({ name: "late", networkId: 2, httpPort: 8080, tcpPort: 9002 }));
      await waitFor(async () => (await w.probe(POD_IPV4, 9002)).result === "reached", {
        timeout: 10_000,
        message: "late's own port",
      });
      // Fail closed: the shared address and port is tagged for neither network.
      await waitFor(async () => (await w.probe(POD_IPV4, 8080, "/")).result === "NO_ROUTE", {
        timeout: 10_000,
        message: "8080 tagged for neither pod",
      });
      assert.equal((await w.probe(POD_IPV6, 8080, "/")).result, "NO_ROUTE");
      for (const name of ["late", "a"]) {
        const event = await eventFor(core, NS, name, "ProbeTargetConflict");
        assert.equal(event.type, "Warning");
        assert.match(event.message ?? "", /:8080 .*fail closed/);
        // Neither pod's namespace nor the other's name: another tenant is never named.
        assert.doesNotMatch(event.message ?? "", new RegExp(`${NS}|\\blate\\b|"a"`));
        assertAgentEvent(event, started);
      }
      await core.deleteNamespacedPod({ namespace: NS, name: "late", gracePeriodSeconds: 0 });
      await waitFor(async () =>
        (await w.probe(POD_IPV4, 9002)).result === "NO_ROUTE" &&
        (await w.probe(POD_IPV4, 8080, "/")).body === w.podIn(1), {
        timeout: 10_000,
        message: "late gone and a's port back in its network",
      });
    },
  );

  await step("Events about the Node are stored in the default namespace", async () => {
    const event = await eventFor(core, "default", NODE, "ProbeProgramsAttached");
    assert.equal(event.type, "Normal");
    assert.equal(event.involvedObject.kind, "Node");
    assert.equal(event.involvedObject.namespace, undefined);
    assertAgentEvent(event, started);
  });

  const outages: [number, number][] = [];
  await step("an API server outage leaves the map, and the agent converges after", async () => {
    const before = mapContents(w.pinPath);
    const restarts = (await agent.metric("lace_watch_restarts_total")) ?? 0;
    await cp.stopApiServer();
    const stopped = Date.now();
    // Under Deno 2.9.6 client-node's watch body neither ends nor fails when the server's
    // connection closes; the connection pool's report of the broken watch is what notices, well
    // before the liveness check (--watch-liveness, 30 s) could.
    await waitFor(async () => ((await agent.metric("lace_watch_restarts_total")) ?? 0) > restarts, {
      timeout: 10_000,
      message: "the agent's watch to fail and restart",
    });
    console.log(`The agent noticed the outage after ${Date.now() - stopped} ms`);
    assert.deepEqual(mapContents(w.pinPath), before);
    assert.equal((await w.probe(POD_IPV4, 8081, "/")).body, w.podIn(2));
    assert.equal((await agent.get("/healthz")).status, 200);
    // A pod deleted while this API server is away (in a real cluster another replica would
    // serve the delete): the agent can only learn it from the relist after reconnecting.
    assert.equal(await etcdDelete(cp, `/registry/pods/${NS}/b`), 1);
    await cp.startApiServer();
    outages.push([stopped, Date.now()]);
    await waitFor(async () =>
      (await w.probe(POD_IPV4, 8081, "/")).result === "NO_ROUTE" &&
      mapContents(w.pinPath).length === before.length - 4, {
      timeout: 60_000,
      message: "b removed after the relist",
    });
    assert.equal((await w.probe(POD_IPV4, 8080, "/")).body, w.podIn(1));
    // The process survived the server's shutdown (HTTP/1.1 only: no GOAWAY crash).
    assert.equal((await agent.get("/healthz")).status, 200);
    assert.equal((await agent.get("/readyz")).status, 200);
  });

  await step("after the restart the watch delivers new pods and deletes", async () => {
    await startPod(core, podBody({ name: "d", networkId: 2, httpPort: 8081, tcpPort: 9001 }));
    await waitFor(async () => (await w.probe(POD_IPV6, 8081, "/")).body === w.podIn(2), {
      timeout: 20_000,
      message: "d reachable",
    });
    await core.deleteNamespacedPod({ namespace: NS, name: "d", gracePeriodSeconds: 0 });
    await waitFor(async () => (await w.probe(POD_IPV6, 8081, "/")).result === "NO_ROUTE", {
      timeout: 10_000,
      message: "d gone",
    });
  });

  await step(
    "a flood of Events from one namespace does not crowd out another namespace's Event",
    async () => {
      // 50 pods of 25 containers whose probes name no port: 1250 ProbeIgnored Events at once
      // (25 each, the per-object burst), past the 1000 the whole queue holds.
      await cp.createNamespace("flood");
      await cp.createNamespace("victim");
      const unresolvable = (name: string, containers: number) => {
        const body = podBody({ name, networkId: 1, httpPort: 8080, tcpPort: 9000 });
        body.spec!.containers = Array.from({ length: containers }, (_, i) => ({
          name: `c${i}`,
          image: "registry.invalid/app:1",
          livenessProbe: { httpGet: { path: "/", port: `no-port-${i}` } },
        }));
        return body;
      };
      // Frozen, the agent learns every pod in one go when it runs again: one reconcile, whose
      // Events are all recorded before the first is sent.
      agent.freeze();
      try {
        for (let batch = 0; batch < 5; batch++) {
          await Promise.all(
            Array.from(
              { length: 10 },
              (_, i) => startPod(core, unresolvable(`f-${batch * 10 + i}`, 25), "flood"),
            ),
          );
        }
        await startPod(core, unresolvable("web", 1), "victim");
      } finally {
        agent.thaw();
      }
      const event = await eventFor(core, "victim", "web", "ProbeIgnored");
      assert.match(event.message ?? "", /no-port-0/);
      assertAgentEvent(event, started);
      const dropped = await agent.metric('lace_events_dropped_total{reason="namespace-full"}');
      assert.ok((dropped ?? 0) > 0, `the flood filled its namespace's share: ${dropped} dropped`);
      // Nor the agent's log: the first 10 ProbeIgnored lines of each namespace in full, the
      // flood's other 1240 summed up a minute later (lib/log/limiter.ts), not 1250 lines at once.
      const skipLines = (namespace: string) =>
        agent.logs.filter((line) => line.includes(`"message":"Pod \\"${namespace}/`));
      await waitFor(() => skipLines("victim").length > 0, {
        timeout: 10_000,
        message: "the victim's ProbeIgnored line in the agent's log",
      });
      assert.equal(skipLines("victim").length, 1);
      assert.equal(skipLines("flood").length, 10, skipLines("flood").slice(0, 12).join("\n"));
    },
  );

  await step("the agent was never refused by the chart's RBAC", () => {
    assert.ok(agent.logs.length > 0, "the agent's log was captured");
    assert.deepEqual(unsafeLines(agent, outages), []);
  });
});
