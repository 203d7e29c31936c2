/**
 * Tenant isolation, tried the way a hostile pod author would: the real agent
 * process on the simulated node (two overlay networks whose pods share one
 * IPv4 and one IPv6 address), pods from the repository's test API server,
 * the chained `lace` CNI plugin run as a runtime runs it, and the kernel
 * deciding where each of the kubelet stand-in's connects lands.
 */
import assert from "node:assert/strict";
import { TestApiServer } from "./api_server/mod.ts";
import type { KubeObject } from "./api_server/mod.ts";
import {
  type AgentProcess,
  agentTestOptions,
  AgentWorld,
  POD_IPV4,
  POD_IPV6,
  podManifest,
} from "./helpers/agent_process.ts";
import { waitFor } from "./helpers/wait.ts";
import { execPlugin, laceCommand } from "./helpers/cni_runtime.ts";
import { SimWorld } from "./helpers/sim_world.ts";
import { AgentCore } from "../lib/agent/core.ts";
import { defaultConfig } from "../lib/config.ts";
import type { Pod } from "../lib/pods/pod.ts";
import type { Skip } from "../lib/rules/targets.ts";

/**
 * The world, the test API server with `pods`, and an agent using both, with its
 * CNI socket; `dirPods` go to the pods directory, which the agent then also reads.
 */
async function startWorld(
  pods: Record<string, unknown>[],
  extra: string[] = [],
  dirPods: Record<string, unknown>[] = [],
) {
  const w = await AgentWorld.create();
  let api: TestApiServer | undefined;
  try {
    api = await TestApiServer.start({ namespaces: ["default", "e2e", "tenant-a", "tenant-b"] });
    const socket = `${w.podsDir}/run/cni.sock`;
    // The server gives each pod its own uid, as a real one does: tests read it back.
    for (const pod of pods) {
      (pod.metadata as { uid: string }).uid = api.put(pod as unknown as KubeObject).metadata!.uid!;
    }
    for (const pod of dirPods) await w.writePod(pod);
    const agent = w.startAgent([
      `--kubeconfig=${await api.writeKubeconfig()}`,
      `--cni-socket=${socket}`,
      ...(dirPods.length ? [`--pods-dir=${w.podsDir}`] : []),
      ...extra,
    ]);
    await agent.ready(60_000);
    const server = api;
    return {
      w,
      api: server,
      agent,
      socket,
      async [Symbol.asyncDispose]() {
        await w.dispose();
        await server[Symbol.asyncDispose]();
      },
    };
  } catch (e) {
    await w.dispose();
    await api?.[Symbol.asyncDispose]();
    throw e;
  }
}

/** Runs the `lace` plugin for one command as the runtime does, chained after a network plugin. */
async function plugin(
  command: "ADD" | "CHECK",
  socket: string,
  pod: { name: string; uid: string },
  network: { network: string; networkId: number },
  ips = [POD_IPV4, POD_IPV6],
) {
  const prevResult = {
    cniVersion: "1.0.0",
    interfaces: [{ name: "eth0", sandbox: "/var/run/netns/x" }],
    ips: ips.map((ip) => ({ address: `${ip}/${ip.includes(":") ? 64 : 24}`, interface: 0 })),
  };
  const run = await execPlugin(
    laceCommand(),
    {
      CNI_COMMAND: command,
      CNI_CONTAINERID: `sandbox-${pod.name}`,
      CNI_NETNS: "/var/run/netns/x",
      CNI_IFNAME: "eth0",
      CNI_PATH: "/usr/lib/cni",
      CNI_ARGS: `K8S_POD_NAMESPACE=e2e;K8S_POD_NAME=${pod.name};K8S_POD_UID=${pod.uid}`,
    },
    JSON.stringify({
      cniVersion: "1.0.0",
      name: `lace-${network.network}`,
      type: "lace",
      socket,
      timeout: "5s",
      ...network,
      prevResult,
    }),
  );
  return { ...run, result: run.stdout ? JSON.parse(run.stdout) : undefined };
}

/** The Events the agent recorded with this reason. */
function events(api: TestApiServer, reason: string) {
  return api.store.list(api.typeOf({ apiVersion: "v1", kind: "Event" }), {}).items
    .filter((e) => (e as { reason?: string }).reason === reason) as unknown as {
      involvedObject: { name: string; namespace: string };
      type: string;
      message: string;
    }[];
}

/** Waits for the agent's metric sample to reach `value`. */
function metricReaches(agent: AgentProcess, sample: string, value: number) {
  return waitFor(async () => (await agent.metric(sample)) === value, {
    message: `${sample} = ${value}`,
  });
}

Deno.test({
  name:
    "a pod annotated with another network is tagged with the network the node attached it to, also after the agent restarts",
  ...agentTestOptions,
  async fn() {
    // The attacker's pod claims network 2 in its annotations; its node attaches it to network 1.
    const liar = podManifest({ name: "liar", networkId: 2, httpPort: 8080, tcpPort: 9000 });
    await using t = await startWorld([liar]);
    const { w, api, agent, socket } = t;
    const uid = (liar.metadata as { uid: string }).uid;
    const add = await plugin("ADD", socket, { name: "liar", uid }, {
      network: "net1",
      networkId: 1,
    });
    assert.equal(add.code, 0, add.stdout + add.stderr);
    assert.equal(add.stderr, "");
    // The kubelet stand-in reaches the pod in network 1, never the pod of network 2 at the
    // same address, on every probe port and address.
    for (
      const [host, port, http] of [[POD_IPV4, 8080, "/"], [POD_IPV6, 9000, undefined]] as const
    ) {
      const res = await w.probe(host, port, http);
      assert.equal(res.result, "reached", `${host}:${port}: ${JSON.stringify(res)}`);
      assert.equal(res.body?.trim(), w.podIn(1), `${host}:${port} lands in network 1`);
    }
    const event = await waitFor(() => events(api, "NetworkAnnotationMismatch")[0], {
      message: "a NetworkAnnotationMismatch Event",
    });
    assert.equal(event.involvedObject.name, "liar");
    assert.equal(event.type, "Warning");
    assert.match(event.message, /network "net2" \(id 2\).*network "net1" \(id 1\)/);
    await metricReaches(agent, "lace_network_annotation_mismatches", 1);
    assert.ok(
      agent.logs.some((l) => l.includes("e2e/liar") && l.includes("the node's network is used")),
    );
    // CHECK holds the agent to the node's network, by name and id.
    const check = await plugin("CHECK", socket, { name: "liar", uid }, {
      network: "net1",
      networkId: 1,
    });
    assert.equal(check.code, 0, check.stdout + check.stderr);
    const wrongId = await plugin("CHECK", socket, { name: "liar", uid }, {
      network: "net1",
      networkId: 2,
    });
    assert.equal(wrongId.code, 1);
    assert.equal(wrongId.result.code, 100);
    assert.match(wrongId.result.msg, /network id 1, the plugin says 2/);
    // A restarted agent (an upgrade, a crash) still holds the pod to the node's network.
    await agent.stop("SIGKILL");
    const next = w.startAgent([
      `--kubeconfig=${await api.writeKubeconfig()}`,
      `--cni-socket=${socket}`,
    ]);
    await next.ready();
    await metricReaches(next, "lace_network_annotation_mismatches", 1);
    assert.equal((await w.probe(POD_IPV4, 8080, "/")).body, w.podIn(1));
  },
});

/** A pod of `networkId` in namespace `namespace`, at the simulated pods' shared addresses. */
function tenantPod(
  name: string,
  namespace: string,
  networkId: number,
  httpPort: number,
  tcpPort: number,
  created: string,
) {
  const pod = podManifest({ name, networkId, httpPort, tcpPort, created });
  (pod.metadata as { namespace: string }).namespace = namespace;
  return pod;
}

Deno.test({
  name: "a CNI ADD bringing an address another network's pod holds on the node is refused",
  ...agentTestOptions,
  async fn() {
    const holder = tenantPod("holder", "tenant-a", 2, 8080, 9000, "2026-01-01T00:00:00Z");
    // The newcomer's spec is known (bound to the node) but it has no address yet.
    const newcomer = podManifest({
      name: "newcomer",
      networkId: 1,
      httpPort: 8081,
      tcpPort: 9001,
      ips: [],
    });
    await using t = await startWorld([holder, newcomer]);
    const { w, api, agent, socket } = t;
    assert.equal((await w.probe(POD_IPV4, 8080, "/")).body, w.podIn(2));
    const uid = (newcomer.metadata as { uid: string }).uid;
    const add = await plugin("ADD", socket, { name: "newcomer", uid }, {
      network: "net1",
      networkId: 1,
    });
    assert.equal(add.code, 1, add.stdout + add.stderr);
    assert.equal(add.result.code, 101);
    assert.match(
      add.result.msg,
      /Address 10\.244\.1\.10 is already used on this node by a pod of another network/,
    );
    // Nothing of the newcomer was registered; the holder's probes still land in its network.
    assert.equal((await w.probe(POD_IPV4, 8081, "/")).result, "NO_ROUTE");
    assert.equal((await w.probe(POD_IPV4, 8080, "/")).body, w.podIn(2));
    const event = await waitFor(() => events(api, "AttachRefused")[0], {
      message: "an AttachRefused Event",
    });
    assert.equal(event.involvedObject.name, "newcomer");
    assert.equal(event.type, "Warning");
    assert.doesNotMatch(event.message, /holder|tenant-a/, "the other tenant is never named");
    await metricReaches(agent, 'lace_cni_add_refusals_total{reason="address-conflict"}', 1);
  },
});

Deno.test({
  name:
    "an address and port claimed by two networks is tagged for neither, also after a restart from older-wins",
  ...agentTestOptions,
  async fn() {
    const alpha = tenantPod("alpha-pod", "tenant-a", 1, 8080, 9000, "2026-01-01T00:00:00Z");
    const beta = tenantPod("beta-pod", "tenant-b", 2, 8080, 9001, "2026-01-02T00:00:00Z");
    // First a single-tenant agent: the older pod keeps the shared key. The server stamps
    // creation times in whole seconds, so the newer pod is created a second later.
    await using t = await startWorld([alpha], ["--address-conflict=older-wins"]);
    const { w, api } = t;
    const created = Date.parse(
      api.store.get(api.typeOf({ apiVersion: "v1", kind: "Pod" }), "tenant-a", "alpha-pod")
        .metadata?.creationTimestamp as string,
    );
    await waitFor(() => Date.now() >= created + 1000, { message: "the next second" });
    api.put(beta as unknown as KubeObject);
    await waitFor(async () => (await w.probe(POD_IPV6, 9001)).result === "reached", {
      message: "beta-pod's own port reachable",
    });
    assert.equal((await w.probe(POD_IPV4, 8080, "/")).body, w.podIn(1));
    await t.agent.stop("SIGKILL");
    // The default agent takes over: no probe to the shared key is delivered into any network.
    const agent = w.startAgent([
      `--kubeconfig=${await api.writeKubeconfig()}`,
      `--cni-socket=${t.socket}`,
    ]);
    await agent.ready();
    for (const host of [POD_IPV4, POD_IPV6]) {
      assert.equal((await w.probe(host, 8080, "/")).result, "NO_ROUTE", `${host}:8080`);
    }
    // Each pod's own ports still work.
    assert.equal((await w.probe(POD_IPV4, 9000)).body, w.podIn(1));
    assert.equal((await w.probe(POD_IPV6, 9001)).body, w.podIn(2));
    await metricReaches(agent, "lace_target_conflicts", 2);
    const conflictEvents = await waitFor(() => {
      // The first agent's older-wins Events are there too: this agent's say "fail closed".
      const found = events(api, "ProbeTargetConflict").filter((e) =>
        e.message.includes("fail closed")
      );
      const named = new Set(found.map((e) => e.involvedObject.name));
      return named.has("alpha-pod") && named.has("beta-pod") ? found : undefined;
    }, { message: "a ProbeTargetConflict Event on both pods" });
    for (const e of conflictEvents) {
      assert.equal(e.type, "Warning");
      assert.match(e.message, /(10\.244\.1\.10:8080|\[fd00:244::10\]:8080)/);
      const other = e.involvedObject.name === "alpha-pod"
        ? ["beta", "tenant-b"]
        : ["alpha", "tenant-a"];
      for (const word of other) assert.ok(!e.message.includes(word), `${word} in "${e.message}"`);
    }
  },
});

/** `podManifest` with one more container whose probes use `httpPort` and `tcpPort` too. */
function withSecondContainer(pod: Record<string, unknown>, httpPort: number, tcpPort: number) {
  const spec = pod.spec as { containers: Record<string, unknown>[] };
  spec.containers.push({
    name: "sidecar",
    livenessProbe: { httpGet: { path: "/", port: httpPort } },
    readinessProbe: { tcpSocket: { port: tcpPort } },
  });
  return pod;
}

Deno.test({
  name: "a pod with more targets than the cap gets its first ones, and other pods all of theirs",
  ...agentTestOptions,
  async fn() {
    // 8 targets (2 containers x 2 probes x 2 addresses) against a cap of 4.
    const greedy = withSecondContainer(
      tenantPod("greedy", "tenant-a", 1, 8080, 9000, "2026-01-01T00:00:00Z"),
      8082,
      9002,
    );
    const modest = tenantPod("modest", "tenant-b", 2, 8081, 9001, "2026-01-01T00:00:00Z");
    await using t = await startWorld([greedy, modest], ["--max-targets-per-pod=4"]);
    const { w, api, agent } = t;
    for (const host of [POD_IPV4, POD_IPV6]) {
      // The first container's probes are written; the sidecar's are not.
      assert.equal((await w.probe(host, 8080, "/")).body, w.podIn(1));
      assert.equal((await w.probe(host, 9000)).body, w.podIn(1));
      assert.equal((await w.probe(host, 8082, "/")).result, "NO_ROUTE");
      assert.equal((await w.probe(host, 9002)).result, "NO_ROUTE");
      assert.equal((await w.probe(host, 8081, "/")).body, w.podIn(2));
      assert.equal((await w.probe(host, 9001)).body, w.podIn(2));
    }
    await metricReaches(agent, 'lace_probe_targets_unwritten{reason="cap"}', 4);
    await metricReaches(agent, 'lace_probe_targets{family="ipv4",network="net1"}', 2);
    await metricReaches(agent, "lace_probe_map_entries", 8);
    const event = await waitFor(() => events(api, "ProbeTargetsNotWritten")[0], {
      message: "a ProbeTargetsNotWritten Event",
    });
    assert.equal(event.involvedObject.name, "greedy");
    assert.match(event.message, /8 probe targets and at most 4 per pod/);
  },
});

Deno.test({
  name: "a pod that wants more than the whole map gets a fair share, and other pods all of theirs",
  ...agentTestOptions,
  async fn() {
    // 700 addresses x 102 probes = 71,400 targets, more than the 65,536-entry map, with the
    // per-pod cap lifted so that only the map's capacity stands in the way.
    const ips = Array.from(
      { length: 700 },
      (_, i) => `10.200.${Math.floor(i / 250)}.${i % 250 + 1}`,
    );
    const flood = podManifest({ name: "flood", networkId: 1, httpPort: 8083, tcpPort: 9003, ips });
    (flood.spec as { containers: unknown[] }).containers = Array.from({ length: 34 }, (_, c) => ({
      name: `c${c}`,
      livenessProbe: { tcpSocket: { port: 30000 + 3 * c } },
      readinessProbe: { tcpSocket: { port: 30001 + 3 * c } },
      startupProbe: { tcpSocket: { port: 30002 + 3 * c } },
    }));
    const a = tenantPod("alpha", "tenant-a", 1, 8080, 9000, "2026-01-01T00:00:00Z");
    const b = tenantPod("beta", "tenant-b", 2, 8081, 9001, "2026-01-01T00:00:00Z");
    await using t = await startWorld([a, b], ["--max-targets-per-pod=65536"], [flood]);
    const { w, api, agent } = t;
    for (const host of [POD_IPV4, POD_IPV6]) {
      assert.equal((await w.probe(host, 8080, "/")).body, w.podIn(1));
      assert.equal((await w.probe(host, 9001)).body, w.podIn(2));
    }
    assert.equal(await agent.metric("lace_probe_map_capacity"), 65536);
    assert.equal(await agent.metric("lace_probe_map_entries"), 65536);
    // The cap (here the map's size) stops 71,400 - 65,536 of the flooding pod's targets; its
    // fair share then leaves room for the other pods' 8 entries, and no write fails.
    await metricReaches(agent, 'lace_probe_targets_unwritten{reason="cap"}', 71_400 - 65_536);
    await metricReaches(agent, 'lace_probe_targets_unwritten{reason="map-full"}', 8);
    await metricReaches(agent, 'lace_probe_targets{family="ipv4",network="net1"}', 65_530);
    assert.equal(
      await agent.metric('lace_map_operations_total{op="update",result="error"}'),
      undefined,
    );
    const event = await waitFor(
      () => events(api, "ProbeTargetsNotWritten").find((e) => /fair share/.test(e.message)),
      { message: "a ProbeTargetsNotWritten Event for the full map" },
    );
    assert.equal(event.involvedObject.name, "flood");
    assert.match(event.message, /fair share of 65528 of its 65536/);
  },
});

Deno.test({
  name: "a pod nested thousands of levels deep among good ones costs that pod alone its targets",
  ...agentTestOptions,
  async fn() {
    // The agent core in this process on the real datapath, fed by a source that hands over
    // what an API server would accept (kube-apiserver allows 10,000 levels of nesting).
    await using w = await SimWorld.create();
    const hostile = podManifest({ name: "hostile", networkId: 1, httpPort: 8082, tcpPort: 9002 });
    let inner: Record<string, unknown> = {};
    (hostile.spec as Record<string, unknown>).extra = inner;
    for (let i = 0; i < 9_000; i++) inner = (inner.x = {}) as Record<string, unknown>;
    const pods = [
      podManifest({ name: "a", networkId: 1, httpPort: 8080, tcpPort: 9000 }),
      hostile,
      podManifest({ name: "b", networkId: 2, httpPort: 8081, tcpPort: 9001 }),
    ] as unknown as Pod[];
    const skips: Skip[] = [];
    const core = new AgentCore({
      config: { ...defaultConfig(), nodeName: "e2e-node", debounceMs: 1 },
      store: w.datapath.store,
      sources: [{
        name: "api",
        start: (sink) => Promise.resolve(sink.replaceAll("api", pods)),
        stop: () => Promise.resolve(),
      }],
      onSkip: (skip) => skips.push(skip),
    });
    await core.start();
    try {
      const report = await core.reconcileNow();
      assert.equal(report.error, undefined, "the reconcile as a whole succeeds");
      for (const host of [POD_IPV4, POD_IPV6]) {
        const probe = (port: number) => w.kubelet.probe({ host, port, timeoutMs: 1000 });
        assert.equal((await probe(9000)).body?.trim(), w.node.network(1).pod);
        assert.equal((await probe(9001)).body?.trim(), w.node.network(2).pod);
        assert.equal((await probe(9002)).result, "NO_ROUTE");
      }
      const skip = skips.find((s) => s.pod.name === "hostile");
      assert.equal(skip?.reason, "malformed");
      assert.match(skip!.message, /could not be evaluated/);
    } finally {
      await core.stop();
    }
  },
});
