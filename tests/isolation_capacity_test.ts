/**
 * Tenant isolation against a pod that asks for too much, tried the way a hostile pod author
 * would: more targets than the per-pod cap, more than the whole map, a spec nested thousands of
 * levels deep. The pod pays for its excess alone; every other pod keeps all of its targets.
 */
import assert from "node:assert/strict";
import { agentTestOptions, POD_IPV4, POD_IPV6, podManifest } from "./helpers/agent_process.ts";
import {
  eventsWithReason,
  metricReaches,
  startTenantWorld,
  tenantPod,
} from "./helpers/tenant_world.ts";
import { waitFor } from "./helpers/wait.ts";
import { SimWorld } from "./helpers/sim_world.ts";
import { AgentCore } from "../lib/agent/core.ts";
import { defaultConfig } from "../lib/config.ts";
import type { Pod } from "../lib/pods/pod.ts";
import type { Skip } from "../lib/rules/skip.ts";

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
    await using t = await startTenantWorld([greedy, modest], ["--max-targets-per-pod=4"]);
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
    await metricReaches(agent, 'lace_probe_targets{family="ipv4",network_id="1"}', 2);
    await metricReaches(agent, "lace_probe_map_entries", 8);
    const event = await waitFor(() => eventsWithReason(api, "ProbeTargetsNotWritten")[0], {
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
    await using t = await startTenantWorld([a, b], ["--max-targets-per-pod=65536"], [flood]);
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
    await metricReaches(agent, 'lace_probe_targets{family="ipv4",network_id="1"}', 65_530);
    assert.equal(
      await agent.metric('lace_map_operations_total{op="update",result="error"}'),
      undefined,
    );
    const event = await waitFor(
      () =>
        eventsWithReason(api, "ProbeTargetsNotWritten").find((e) => /fair share/.test(e.message)),
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
      // The simulated node gives both networks' pods one address (see AgentWorld.addressSharing).
      config: {
        ...defaultConfig(),
        nodeName: "e2e-node",
        debounceMs: 1,
        addressSharing: "shared",
      },
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
