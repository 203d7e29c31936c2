/**
 * A tenant makes its pod too large for the agent to read (probe fields over the 16 KiB cap), so
 * that the agent refuses it. Were the addresses it holds forgotten with it, a later pod of
 * another network would be given one of them unrefused, its targets registered there, and the
 * kubelet's probes of the oversized pod (a path and headers its author chose, on a port the
 * later pod probes) tagged into the later pod's network. Played against the real agent
 * process on the simulated node (two overlay networks whose pods share one IPv4 and one IPv6
 * address), with pods from the repository's test API server and the chained `lace` plugin: the
 * refused pod gets no targets and holds its addresses, at the ADD and in the address rule.
 */
import assert from "node:assert/strict";
import { agentTestOptions, POD_IPV4, POD_IPV6 } from "./helpers/agent_process.ts";
import {
  assertAddRefused,
  assertHolderWithdrawn,
  eventsWithReason,
  HELD_BY_ANOTHER_NETWORK,
  metricReaches,
  plugin,
  podBeforeAdd,
  putLater,
  startTenantWorld,
  tenantPod,
} from "./helpers/tenant_world.ts";
import { waitFor } from "./helpers/wait.ts";

/**
 * Tenant A's pod in network 2 at both addresses, over the size cap by a startup probe on port
 * 8081 (the port tenant B's later pod probes) whose path alone is 20 KB.
 */
function oversized(): Record<string, unknown> {
  return makeOversized(tenantPod("huge", "tenant-a", 2, 8080, 9000, "2026-01-01T00:00:00Z"));
}

/** `pod` with a startup probe on port 8081 whose path alone puts it over the size cap. */
function makeOversized(pod: Record<string, unknown>): Record<string, unknown> {
  const [app] = (pod.spec as { containers: Record<string, unknown>[] }).containers;
  app.startupProbe = {
    httpGet: {
      port: 8081,
      path: "/" + "a".repeat(20_000),
      httpHeaders: [{ name: "X-Chosen-By", value: "tenant-a" }],
    },
  };
  return pod;
}

/** Tenant B's pod in network 1, bound to the node with no address yet (its ADD comes next). */
function newcomerPod(): Record<string, unknown> {
  return podBeforeAdd("newcomer", 1, 8081, 9001);
}

/** The Events of `reason` on `name` name none of tenant A's pod, namespace or network. */
function assertEventsNameNoOtherTenant(
  events: ReturnType<typeof eventsWithReason>,
  name: string,
): void {
  assert.ok(events.length > 0, `no Event on ${name}`);
  for (const e of events) {
    assert.equal(e.involvedObject.name, name);
    for (const word of ["huge", "tenant-a", "net2"]) {
      assert.ok(!e.message.includes(word), `${word} in "${e.message}"`);
    }
  }
}

Deno.test({
  name:
    "a pod refused as too large keeps its addresses: a later pod of another network there gets none of its probes tagged",
  ...agentTestOptions,
  async fn() {
    const huge = oversized();
    // Known from the API only (no CNI ADD to refuse): the clash is learnt after the ADD.
    await using t = await startTenantWorld([huge], [], [], "default");
    const { w, api, agent } = t;
    await metricReaches(agent, 'lace_probes_ignored{reason="too-large"}', 1);
    const later = tenantPod("later", "tenant-b", 1, 8081, 9001, "2026-01-02T00:00:00Z");
    await putLater(api, huge, later);
    // The kubelet's connects to the later pod's ports at the held addresses (among them the
    // oversized pod's startup probe, on 8081) are tagged for no network. Waits for the clash or
    // for the attack to work (the probe tagged into network 1), so a failure shows which.
    await waitFor(async () =>
      (await agent.metric("lace_address_clashes")) === 2 ||
      (await w.probe(POD_IPV4, 8081, "/")).body === w.podIn(1), {
      timeout: 15_000,
      message: "the clash learnt, or the later pod's targets tagged",
    });
    for (const [host, port, path] of [[POD_IPV4, 8081, "/"], [POD_IPV6, 9001]] as const) {
      const res = await w.probe(host, port, path);
      assert.equal(res.result, "NO_ROUTE", `${host}:${port}: ${JSON.stringify(res)}`);
    }
    await metricReaches(agent, "lace_address_clashes", 2);
    const events = await waitFor(() => {
      const found = eventsWithReason(api, "AddressClash");
      return found.length >= 2 ? found : undefined;
    }, { message: "an AddressClash Event per address on the later pod" });
    assertEventsNameNoOtherTenant(events, "later");
  },
});

Deno.test({
  name:
    "a CNI ADD bringing an address a pod refused as too large holds is refused for another network",
  ...agentTestOptions,
  async fn() {
    const huge = oversized();
    const newcomer = newcomerPod();
    await using t = await startTenantWorld([huge, newcomer], [], [], "default");
    const { w, api, agent, socket } = t;
    await metricReaches(agent, 'lace_probes_ignored{reason="too-large"}', 1);
    const uid = (newcomer.metadata as { uid: string }).uid;
    const add = await plugin("ADD", socket, { name: "newcomer", uid }, {
      network: "net1",
      networkId: 1,
    });
    assertAddRefused(add, /is already used on this node by a pod of another network/);
    assert.doesNotMatch(add.result.msg, /huge|tenant-a|net2/);
    assert.equal((await w.probe(POD_IPV4, 8081, "/")).result, "NO_ROUTE");
    await metricReaches(agent, 'lace_cni_add_refusals_total{reason="address-conflict"}', 1);
    const events = await waitFor(() => {
      const found = eventsWithReason(api, "AttachRefused");
      return found.length >= 1 ? found : undefined;
    }, { message: "an AttachRefused Event on the newcomer" });
    assertEventsNameNoOtherTenant(events, "newcomer");
  },
});

Deno.test({
  name:
    "a CNI ADD at the address of a pod refused as too large whose network is unknown is refused for every network",
  ...agentTestOptions,
  async fn() {
    const huge = oversized();
    // A network name with a space is no network's: nothing tells which network the pod is in.
    (huge.metadata as { annotations: Record<string, string> }).annotations["lace.io/network"] =
      "net 2";
    const newcomer = newcomerPod();
    await using t = await startTenantWorld([huge, newcomer], [], [], "default");
    const { agent, socket } = t;
    await metricReaches(agent, 'lace_probes_ignored{reason="too-large"}', 1);
    const uid = (newcomer.metadata as { uid: string }).uid;
    for (const networkId of [1, 2]) {
      const add = await plugin("ADD", socket, { name: "newcomer", uid }, {
        network: `net${networkId}`,
        networkId,
      });
      assertAddRefused(add, HELD_BY_ANOTHER_NETWORK, `network ${networkId}: `);
    }
    await metricReaches(agent, 'lace_cni_add_refusals_total{reason="address-conflict"}', 2);
  },
});

Deno.test({
  name:
    "the CNI ADD of a pod refused as too large is refused at an address a pod of another network holds",
  ...agentTestOptions,
  async fn() {
    const holder = tenantPod("holder", "tenant-a", 2, 8080, 9000, "2026-01-01T00:00:00Z");
    const huge = makeOversized(
      podBeforeAdd("huge", 1, 8082, 9002),
    );
    await using t = await startTenantWorld([holder, huge], [], [], "default");
    const { w, agent, socket } = t;
    await metricReaches(agent, 'lace_probes_ignored{reason="too-large"}', 1);
    const uid = (huge.metadata as { uid: string }).uid;
    const add = await plugin("ADD", socket, { name: "huge", uid }, {
      network: "net1",
      networkId: 1,
    });
    assertAddRefused(add, HELD_BY_ANOTHER_NETWORK);
    assert.equal((await w.probe(POD_IPV4, 8080, "/")).body, w.podIn(2), "the holder keeps its own");
  },
});

Deno.test({
  name:
    "a later pod refused as too large at a held address, learnt after its ADD, takes the holder's targets there away",
  ...agentTestOptions,
  async fn() {
    // Its probes are unknown: the kubelet may probe it on the holder's port, which must then not
    // be tagged into the holder's network.
    const holder = tenantPod("holder", "tenant-a", 2, 8080, 9000, "2026-01-01T00:00:00Z");
    await using t = await startTenantWorld([holder], [], [], "default");
    const { w, api } = t;
    assert.equal((await w.probe(POD_IPV4, 8080, "/")).body, w.podIn(2));
    const huge = makeOversized(
      tenantPod("huge", "tenant-b", 1, 8082, 9002, "2026-01-02T00:00:00Z"),
    );
    await putLater(api, holder, huge);
    const events = await assertHolderWithdrawn(t, {
      name: "holder",
      httpPort: 8080,
      tcpPort: 9000,
    });
    // Each pod's Events (the refused pod loses nothing, but hears of it too) name no other tenant.
    for (const e of events) {
      const other = e.involvedObject.name === "holder"
        ? ["huge", "tenant-b", "net1"]
        : ["holder", "tenant-a", "net2"];
      for (const word of other) assert.ok(!e.message.includes(word), `${word} in "${e.message}"`);
    }
  },
});
