/**
 * The client-node adapter of `lace netcheck` against the test API server:
 * namespace ensure, DaemonSet create/patch/delete, pods list with selectors,
 * exec over the websocket channel protocol, the Lease lock, and one whole run
 * whose API calls stay within the documented RBAC.
 */
import assert from "node:assert/strict";
import * as k8s from "../../lib/kube/k8s.ts";
import { loadKubeConfig } from "../../lib/kube/client.ts";
import { EXEC_OUTPUT_LIMIT } from "../../lib/netcheck/cluster/exec_output.ts";
import { ClientNodeCluster } from "../../lib/netcheck/cluster/kube_adapter.ts";
import { acquireLease } from "../../lib/netcheck/cluster/lease.ts";
import { probeDaemonSet, runSelector } from "../../lib/netcheck/cluster/manifest.ts";
import { defaultNetcheckOptions } from "../../lib/netcheck/options.ts";
import { EXIT_PASSED, runChecks } from "../../lib/netcheck/pipeline/run.ts";
import { type ExecRunner, installExec } from "../api_server/exec.ts";
import { type KubeObject, TestApiServer } from "../api_server/mod.ts";

const NS = "lace-system";

async function setup(runner: ExecRunner = () => ({ exitCode: 0 })) {
  const server = await TestApiServer.start();
  installExec(server, runner);
  const kubeConfig = loadKubeConfig({ kubeconfig: await server.writeKubeconfig() });
  const cluster = new ClientNodeCluster(k8s, kubeConfig);
  return {
    server,
    cluster,
    [Symbol.asyncDispose]: () => server.close(),
  };
}

function probePod(runId: string, node: string, extra: Record<string, unknown> = {}): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: `lace-netcheck-${runId}-${node}`,
      namespace: NS,
      labels: { "app.kubernetes.io/name": "lace-netcheck", "lace.io/netcheck-run": runId },
    },
    spec: { nodeName: node, containers: [{ name: "connect", image: "agnhost" }] },
    status: {
      phase: "Running",
      conditions: [{ type: "Ready", status: "True" }],
      podIP: "10.1.0.1",
      podIPs: [{ ip: `10.1.0.${node.length}` }, { ip: `fd00::${node.length}` }],
    },
    ...extra,
  };
}

const dsType = (server: TestApiServer) =>
  server.typeOf({ apiVersion: "apps/v1", kind: "DaemonSet" });

Deno.test("ensureNamespace creates a missing namespace once and leaves an existing one", async () => {
  await using t = await setup();
  await t.cluster.ensureNamespace(NS);
  await t.cluster.ensureNamespace(NS);
  await t.cluster.ensureNamespace("default");
  const posts = t.server.requests.filter((r) =>
    r.method === "POST" && r.path === "/api/v1/namespaces"
  );
  assert.equal(posts.length, 1);
  const ns = t.server.store.get(
    t.server.typeOf({ apiVersion: "v1", kind: "Namespace" }),
    undefined,
    NS,
  );
  assert.equal(ns.metadata?.name, NS);
});

Deno.test("applyDaemonSet creates the DaemonSet and merge-patches it when it already exists", async () => {
  await using t = await setup();
  await t.cluster.ensureNamespace(NS);
  const options = { ...defaultNetcheckOptions(), selector: { pool: "a" } };
  await t.cluster.applyDaemonSet(NS, probeDaemonSet(options, "r1"));
  await t.cluster.applyDaemonSet(NS, probeDaemonSet({ ...options, image: "agnhost:new" }, "r1"));
  const patch = t.server.requests.find((r) => r.method === "PATCH");
  assert.equal(patch?.contentType, "application/merge-patch+json");
  const ds = t.server.store.get(dsType(t.server), NS, "lace-netcheck-r1");
  const spec = ds.spec as {
    template: { spec: { containers: { image: string }[]; nodeSelector: Record<string, string> } };
  };
  assert.equal(spec.template.spec.containers[0].image, "agnhost:new");
  assert.deepEqual(spec.template.spec.nodeSelector, { pool: "a", "kubernetes.io/os": "linux" });
});

Deno.test("daemonSetDesired reads the status and deleteDaemonSet tolerates a missing one", async () => {
  await using t = await setup();
  await t.cluster.ensureNamespace(NS);
  assert.equal(await t.cluster.daemonSetDesired(NS, "lace-netcheck-r1"), null);
  await t.cluster.applyDaemonSet(NS, probeDaemonSet(defaultNetcheckOptions(), "r1"));
  const ds = t.server.store.get(dsType(t.server), NS, "lace-netcheck-r1");
  t.server.put({ ...ds, status: { desiredNumberScheduled: 3 } });
  assert.equal(await t.cluster.daemonSetDesired(NS, "lace-netcheck-r1"), 3);
  await t.cluster.deleteDaemonSet(NS, "lace-netcheck-r1");
  assert.equal(await t.cluster.daemonSetDesired(NS, "lace-netcheck-r1"), null);
  await t.cluster.deleteDaemonSet(NS, "lace-netcheck-r1");
});

Deno.test("listPods returns only the run's pods, with podIPs, readiness and waiting reasons", async () => {
  await using t = await setup();
  t.server.put(probePod("r1", "node-a"));
  t.server.put(probePod("r2", "node-b"));
  t.server.put(probePod("r1", "node-c", {
    spec: {
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [{
              matchFields: [{ key: "metadata.name", operator: "In", values: ["node-c"] }],
            }],
          },
        },
      },
      containers: [{ name: "connect", image: "agnhost" }],
    },
    status: {
      phase: "Pending",
      conditions: [{ type: "PodScheduled", status: "False", reason: "Unschedulable" }],
    },
  }));
  t.server.put(probePod("r1", "node-d", {
    status: {
      phase: "Pending",
      containerStatuses: [{
        name: "bandwidth",
        ready: false,
        restartCount: 0,
        image: "iperf3",
        imageID: "",
        state: { waiting: { reason: "ImagePullBackOff" } },
      }],
    },
  }));
  const pods = await t.cluster.listPods(NS, runSelector("r1"));
  assert.deepEqual(pods.map((p) => p.nodeName).sort(), ["node-a", "node-c", "node-d"]);
  const a = pods.find((p) => p.nodeName === "node-a")!;
  assert.deepEqual(a.podIPs, ["10.1.0.6", "fd00::6"]);
  assert.equal(a.ready, true);
  assert.equal(pods.find((p) => p.nodeName === "node-c")!.unschedulable, true);
  assert.deepEqual(pods.find((p) => p.nodeName === "node-d")!.containerReasons, {
    bandwidth: "ImagePullBackOff",
  });
});

Deno.test("exec returns stdout, stderr and the exit code over the channel protocol", async () => {
  const seen: { container: string; command: string[]; protocol: string }[] = [];
  await using t = await setup((r) => {
    seen.push(r);
    return r.command[1] === "connect"
      ? { exitCode: 1, stderr: "TIMEOUT\n" }
      : { exitCode: 0, stdout: '{"end":{}}\n' };
  });
  t.server.put(probePod("r1", "node-a"));
  const pod = "lace-netcheck-r1-node-a";
  const failed = await t.cluster.exec(
    NS,
    pod,
    "connect",
    ["/agnhost", "connect", "[fd00::1]:1199"],
    {
      timeoutMs: 5000,
    },
  );
  assert.deepEqual(failed, { exitCode: 1, stdout: "", stderr: "TIMEOUT\n" });
  const ok = await t.cluster.exec(NS, pod, "bandwidth", ["iperf3", "-c", "x", "-J"], {
    timeoutMs: 5000,
  });
  assert.deepEqual(ok, { exitCode: 0, stdout: '{"end":{}}\n', stderr: "" });
  assert.deepEqual(seen[0].command, ["/agnhost", "connect", "[fd00::1]:1199"]);
  assert.equal(seen[1].container, "bandwidth");
  assert.equal(seen[0].protocol, "v5.channel.k8s.io");
});

Deno.test("exec into a missing pod reports the failure instead of throwing", async () => {
  await using t = await setup();
  const r = await t.cluster.exec(NS, "nope", "connect", ["true"], { timeoutMs: 5000 });
  assert.equal(r.exitCode, -1);
  assert.match(r.error!, /404/);
});

Deno.test("exec that outlives its timeout is closed and reported", async () => {
  const { promise: never } = Promise.withResolvers<never>();
  const release = Promise.withResolvers<void>();
  await using t = await setup(() =>
    Promise.race([never, release.promise.then(() => ({ exitCode: 0 }))])
  );
  t.server.put(probePod("r1", "node-a"));
  const r = await t.cluster.exec(NS, "lace-netcheck-r1-node-a", "connect", ["sleep"], {
    timeoutMs: 100,
  });
  release.resolve();
  assert.equal(r.exitCode, -1);
  assert.match(r.error!, /no result within 0.1s/);
});

Deno.test("exec of a pod that answers without end keeps at most EXEC_OUTPUT_LIMIT bytes and closes the session", async () => {
  let sent = 0;
  const frame = "x".repeat(64 * 1024);
  await using t = await setup(() => ({
    exitCode: 0,
    stdoutFrames: (function* () {
      // A pod printing one endless line (no newline ever).
      for (;;) {
        sent++;
        yield frame;
      }
    })(),
  }));
  t.server.put(probePod("r1", "node-a"));
  const r = await t.cluster.exec(NS, "lace-netcheck-r1-node-a", "connect", ["curl"], {
    timeoutMs: 20_000,
  });
  assert.equal(r.tooLong, true);
  assert.equal(r.exitCode, -1);
  assert.match(r.error!, new RegExp(`output above ${EXEC_OUTPUT_LIMIT} bytes`));
  assert.ok(r.stdout.length <= EXEC_OUTPUT_LIMIT, `kept ${r.stdout.length} characters`);
  assert.ok(r.stdout.length >= EXEC_OUTPUT_LIMIT - frame.length);
  // The session was closed at the limit: the server stopped sending soon after (not at the timeout).
  const atClose = sent;
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.ok(sent - atClose <= 2, `${sent - atClose} frames sent after the close`);
  assert.ok(sent < 2 * EXEC_OUTPUT_LIMIT / frame.length, `${sent} frames sent`);
});

Deno.test("the Lease lock blocks a second run, names the holder, and is deleted on release", async () => {
  await using t = await setup();
  await t.cluster.ensureNamespace(NS);
  const first = await acquireLease(t.cluster, NS, "run-1 by ops@laptop", 60);
  await assert.rejects(
    acquireLease(t.cluster, NS, "run-2", 60),
    /Another netcheck run "run-1 by ops@laptop" holds Lease "lace-system\/lace-netcheck"/,
  );
  await first.release();
  assert.equal(await t.cluster.getLease(NS, "lace-netcheck"), null);
  const second = await acquireLease(t.cluster, NS, "run-2", 60);
  await second.release();
});

Deno.test("an expired Lease is taken over through an update with its resourceVersion", async () => {
  await using t = await setup();
  await t.cluster.ensureNamespace(NS);
  await t.cluster.createLease(NS, {
    name: "lace-netcheck",
    holder: "crashed",
    durationS: 10,
    renewTime: Date.now() - 60_000,
    resourceVersion: "",
  });
  const lock = await acquireLease(t.cluster, NS, "run-2", 60);
  assert.equal(lock.tookOverFrom, "crashed");
  assert.equal((await t.cluster.getLease(NS, "lace-netcheck"))!.holder, "run-2");
  await lock.release();
});

Deno.test("a whole run over the API passes and uses only the documented RBAC verbs", async () => {
  const iperf = JSON.stringify({ end: { sum_received: { bits_per_second: 5e9 } } });
  await using t = await setup((r) =>
    r.command[0] === "iperf3" ? { exitCode: 0, stdout: iperf + "\n" } : { exitCode: 0 }
  );
  const nodes = ["node-a", "node-b", "node-c"];
  // Stand in for the DaemonSet controller: once the DaemonSet exists, add its pods.
  const controller = t.server.addHandler((request, route) => {
    if (request.method === "GET" && route?.resource === "daemonsets" && route.name) {
      const ds = t.server.store.list(dsType(t.server), {}).items.find((d) =>
        d.metadata?.name === route.name
      );
      if (
        ds &&
        !(ds.status as { desiredNumberScheduled?: number } | undefined)?.desiredNumberScheduled
      ) {
        const runId = ds.metadata!.labels!["lace.io/netcheck-run"];
        t.server.put({ ...ds, status: { desiredNumberScheduled: nodes.length } });
        for (const n of nodes) t.server.put(probePod(runId, n));
      }
    }
    return undefined;
  });
  const r = await runChecks({
    ...defaultNetcheckOptions(),
    ipFamily: "ipv6",
    readyTimeoutMs: 10_000,
    // The latency phase is more execs of the same verb; its answers are tested on the
    // in-memory and netns clusters.
    latencySamples: 0,
  }, {
    cluster: t.cluster,
    progress: { write: () => {}, isTerminal: false },
    sinks: [],
    pollMs: 10,
  });
  controller();
  assert.equal(r.exitCode, EXIT_PASSED, r.outcome.error ?? "");
  assert.equal(r.summary.bandwidth.passed, 6);
  assert.equal(t.server.store.list(dsType(t.server), {}).items.length, 0, "DaemonSet left behind");
  assert.equal(await t.cluster.getLease(NS, "lace-netcheck"), null);
  const verbs = new Set(t.server.requests.map((q) => {
    const route = t.server.route(q.path)!;
    const resource = route.subresource ? `${route.resource}/${route.subresource}` : route.resource;
    const verb = q.method === "GET"
      ? (route.name ? "get" : "list")
      : { POST: "create", PUT: "update", PATCH: "patch", DELETE: "delete" }[q.method];
    return `${resource}:${verb}`;
  }));
  const allowed = new Set([
    "namespaces:get",
    "namespaces:create",
    "daemonsets:create",
    "daemonsets:get",
    "daemonsets:patch",
    "daemonsets:delete",
    "pods:list",
    "pods/exec:create",
    "pods/exec:get",
    "leases:get",
    "leases:create",
    "leases:update",
    "leases:delete",
  ]);
  for (const v of verbs) assert.ok(allowed.has(v), `${v} is not in the documented RBAC`);
});

Deno.test("a forbidden API call ends the run with exit 3 and points at the RBAC", async () => {
  await using t = await setup();
  t.server.failNext(1, 403, (r) => r.method === "POST" && r.path.includes("daemonsets"));
  const r = await runChecks({ ...defaultNetcheckOptions(), readyTimeoutMs: 1000 }, {
    cluster: t.cluster,
    progress: { write: () => {}, isTerminal: false },
    sinks: [],
    pollMs: 10,
  });
  assert.equal(r.exitCode, 3);
  assert.match(r.outcome.error!, /HTTP 403: .*; grant the RBAC listed in docs\/netcheck\.md/);
  assert.equal(await t.cluster.getLease(NS, "lace-netcheck"), null);
});
