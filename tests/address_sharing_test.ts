/**
 * One network per address on a node, whatever told the agent the network, tried as a hostile
 * tenant would: the real agent process on the simulated node (two overlay networks whose pods have
 * the same IPv4 and IPv6 address), pods from the repository's test API server, the chained `lace`
 * plugin run as a runtime runs it, and the kernel deciding where each of the kubelet stand-in's
 * connects lands. Under the default a later pod of another network at a held address gets none of
 * its probes tagged (so it can never answer the kubelet with a same-host redirect into the
 * holder's network), also after a restart; under the opt-in both are tagged: the documented
 * exposure.
 */
import assert from "node:assert/strict";
import { agentTestOptions, POD_IPV4, POD_IPV6 } from "./helpers/agent_process.ts";
import {
  assertAddRefused,
  eventsWithReason,
  metricReaches,
  plugin,
  podBeforeAdd,
  putLater,
  startTenantWorld,
  tenantPod,
} from "./helpers/tenant_world.ts";
import { waitFor } from "./helpers/wait.ts";

/** The victim, in network 2, holds both addresses; the attacker will come later, in network 1. */
function victimAndAttacker() {
  return {
    victim: tenantPod("victim", "tenant-a", 2, 8080, 9000, "2026-01-01T00:00:00Z"),
    attacker: tenantPod("attacker", "tenant-b", 1, 8081, 9001, "2026-01-02T00:00:00Z"),
  };
}

Deno.test({
  name:
    "under the default a later pod of another network at a held address gets none of its probes tagged and the holder keeps its own, also after the agent restarts",
  ...agentTestOptions,
  async fn() {
    const { victim, attacker } = victimAndAttacker();
    // Both known from the API only (no CNI ADD to refuse): the clash is learnt after the ADD.
    await using t = await startTenantWorld([victim], [], [], "default");
    const { w, api, socket } = t;
    await putLater(api, victim, attacker);
    await metricReaches(t.agent, "lace_address_clashes", 2);
    const check = async (agent: typeof t.agent) => {
      // The holder's probes land in its own network, on both addresses.
      assert.equal((await w.probe(POD_IPV4, 8080, "/")).body, w.podIn(2));
      assert.equal((await w.probe(POD_IPV6, 9000)).body, w.podIn(2));
      // The attacker's are tagged for no network: the kubelet reaches no pod, so none can
      // answer it with a redirect to the victim's ports.
      for (const [host, port, path] of [[POD_IPV4, 8081, "/"], [POD_IPV6, 9001]] as const) {
        const res = await w.probe(host, port, path);
        assert.equal(res.result, "NO_ROUTE", `${host}:${port}: ${JSON.stringify(res)}`);
      }
      await metricReaches(agent, "lace_address_clashes", 2);
      assert.equal(await agent.metric("lace_shared_addresses"), 0);
    };
    await check(t.agent);
    const events = await waitFor(() => {
      const found = eventsWithReason(api, "AddressClash");
      return found.length >= 2 ? found : undefined;
    }, { message: "an AddressClash Event per address on the attacker" });
    for (const e of events) {
      assert.equal(e.involvedObject.name, "attacker");
      assert.equal(e.type, "Warning");
      for (const word of ["victim", "tenant-a", "net2"]) {
        assert.ok(!e.message.includes(word), `${word} in "${e.message}"`);
      }
    }
    assert.equal(
      eventsWithReason(api, "AddressClash").some((e) => e.involvedObject.name === "victim"),
      false,
    );
    assert.ok(t.agent.logs.some((l) => l.includes("tenant-b/attacker") && l.includes("exclusive")));
    // A restarted agent (an upgrade, a crash) lists the pods afresh and reaches the same verdict.
    await t.agent.stop("SIGKILL");
    const next = w.startAgent([
      `--kubeconfig=${await api.writeKubeconfig()}`,
      `--cni-socket=${socket}`,
    ]);
    await next.ready();
    await check(next);
  },
});

Deno.test({
  name:
    "a CNI ADD whose conf names no network is refused when the trusted annotations put the pod in another network than the address's holder",
  ...agentTestOptions,
  async fn() {
    const holder = tenantPod("holder", "tenant-a", 2, 8080, 9000, "2026-01-01T00:00:00Z");
    // The network plugin annotated the newcomer (network 1); its conf names no network.
    const newcomer = podBeforeAdd("newcomer", 1, 8081, 9001);
    await using t = await startTenantWorld([holder, newcomer], [], [], "default");
    const { w, agent, socket } = t;
    const uid = (newcomer.metadata as { uid: string }).uid;
    const add = await plugin("ADD", socket, { name: "newcomer", uid }, {});
    assertAddRefused(add, /is already used on this node by a pod of another network/);
    assert.equal((await w.probe(POD_IPV4, 8080, "/")).body, w.podIn(2));
    assert.equal((await w.probe(POD_IPV4, 8081, "/")).result, "NO_ROUTE");
    await metricReaches(agent, 'lace_cni_add_refusals_total{reason="address-conflict"}', 1);
  },
});

Deno.test({
  name:
    "under --address-sharing=shared pods of two networks at one address are both tagged: the documented exposure",
  ...agentTestOptions,
  async fn() {
    const { victim, attacker } = victimAndAttacker();
    await using t = await startTenantWorld([victim], ["--address-sharing=shared"]);
    const { w, agent, api } = t;
    await putLater(api, victim, attacker);
    await metricReaches(agent, "lace_shared_addresses", 2);
    // Each pod's probes land in its own network; so a same-host redirect from the attacker's
    // port to the victim's (which the kubelet follows) would be tagged into the victim's network.
    assert.equal((await w.probe(POD_IPV4, 8080, "/")).body, w.podIn(2));
    assert.equal((await w.probe(POD_IPV4, 8081, "/")).body, w.podIn(1));
    assert.equal((await w.probe(POD_IPV6, 9001)).body, w.podIn(1));
    await metricReaches(agent, "lace_shared_addresses", 2);
    assert.equal(await agent.metric("lace_address_clashes"), 0);
    assert.ok(agent.logs.some((l) => l.includes("Address sharing is on")), "warned at start");
  },
});
