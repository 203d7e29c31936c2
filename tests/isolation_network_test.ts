/**
 * Tenant isolation against a pod's claims about where it belongs, tried the way a hostile pod
 * author would: the real agent process on the simulated node, pods from the repository's test API
 * server, the chained `lace` CNI plugin run as a runtime runs it, and the kernel deciding where
 * each of the kubelet stand-in's connects lands: the network the node attached a pod to wins over
 * its annotations, and an address another network holds is refused or tagged for neither.
 */
import assert from "node:assert/strict";
import type { KubeObject } from "./api_server/mod.ts";
import { agentTestOptions, POD_IPV4, POD_IPV6, podManifest } from "./helpers/agent_process.ts";
import {
  assertAddRefused,
  eventsWithReason,
  metricReaches,
  plugin,
  podBeforeAdd,
  startTenantWorld,
  tenantPod,
} from "./helpers/tenant_world.ts";
import { waitFor } from "./helpers/wait.ts";

Deno.test({
  name:
    "a pod annotated with another network is tagged with the network the node attached it to, also after the agent restarts",
  ...agentTestOptions,
  async fn() {
    // The attacker's pod claims network 2 in its annotations; its node attaches it to network 1.
    const liar = podManifest({ name: "liar", networkId: 2, httpPort: 8080, tcpPort: 9000 });
    await using t = await startTenantWorld([liar]);
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
    const event = await waitFor(() => eventsWithReason(api, "NetworkAnnotationMismatch")[0], {
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

Deno.test({
  name: "a CNI ADD bringing an address another network's pod holds on the node is refused",
  ...agentTestOptions,
  async fn() {
    const holder = tenantPod("holder", "tenant-a", 2, 8080, 9000, "2026-01-01T00:00:00Z");
    // The newcomer's spec is known (bound to the node) but it has no address yet.
    const newcomer = podBeforeAdd("newcomer", 1, 8081, 9001);
    // The agent's default policy: one network per address on the node.
    await using t = await startTenantWorld([holder, newcomer], [], [], "default");
    const { w, api, agent, socket } = t;
    assert.equal((await w.probe(POD_IPV4, 8080, "/")).body, w.podIn(2));
    const uid = (newcomer.metadata as { uid: string }).uid;
    const add = await plugin("ADD", socket, { name: "newcomer", uid }, {
      network: "net1",
      networkId: 1,
    });
    assertAddRefused(
      add,
      /Address 10\.244\.1\.10 is already used on this node by a pod of another network/,
    );
    // Nothing of the newcomer was registered; the holder's probes still land in its network.
    assert.equal((await w.probe(POD_IPV4, 8081, "/")).result, "NO_ROUTE");
    assert.equal((await w.probe(POD_IPV4, 8080, "/")).body, w.podIn(2));
    const event = await waitFor(() => eventsWithReason(api, "AttachRefused")[0], {
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
    await using t = await startTenantWorld([alpha], ["--address-conflict=older-wins"]);
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
      const found = eventsWithReason(api, "ProbeTargetConflict").filter((e) =>
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
