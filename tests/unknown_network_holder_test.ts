/**
 * A pod whose network nothing tells (annotations malformed, no network from the node's attach),
 * played as a hostile tenant would against the real agent process on the simulated node (two
 * overlay networks whose pods share one IPv4 and one IPv6 address), with pods from the
 * repository's test API server and the chained `lace` plugin. Such a pod gets no targets of its
 * own. Were it to hold no address either, another network's pod would share its address
 * unrefused and keep its targets there, and the kubelet's probes of the unknown pod (a path and
 * headers its author chose, on a port the other pod probes) would be tagged into the other pod's
 * network. So it holds its addresses against every network, as a pod refused as too large does,
 * and its own ADD, whose network is then unknown too, is refused at an address another pod holds
 * (accepting it would fail open).
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
 * `pod` with network annotations no network has (a name with a space) and a readiness probe on
 * port 8081, the victim's, with a path and header of its author's choosing.
 */
function unknownNetwork(pod: Record<string, unknown>): Record<string, unknown> {
  (pod.metadata as { annotations: Record<string, string> }).annotations["lace.io/network"] =
    "net 2";
  const [app] = (pod.spec as { containers: Record<string, unknown>[] }).containers;
  app.startupProbe = {
    httpGet: {
      port: 8081,
      path: "/chosen-by-tenant-a",
      httpHeaders: [{ name: "X-Chosen-By", value: "tenant-a" }],
    },
  };
  return pod;
}

/** The Events of `reason` on `name` name none of `words` (the other tenant's pod, namespace). */
function assertEventsNameNone(
  events: ReturnType<typeof eventsWithReason>,
  name: string,
  words: string[],
): void {
  const mine = events.filter((e) => e.involvedObject.name === name);
  assert.ok(mine.length > 0, `no Event on ${name}`);
  for (const e of mine) {
    for (const word of words) assert.ok(!e.message.includes(word), `${word} in "${e.message}"`);
  }
}

Deno.test({
  name:
    "a later pod whose network annotations are malformed takes the holder's targets at its address away, so none of its probes lands in the holder's network",
  ...agentTestOptions,
  async fn() {
    const victim = tenantPod("victim", "tenant-b", 1, 8081, 9001, "2026-01-01T00:00:00Z");
    // Known from the API only (no CNI ADD to refuse): the clash is learnt after the ADD.
    await using t = await startTenantWorld([victim], [], [], "default");
    const { w, api, agent } = t;
    assert.equal((await w.probe(POD_IPV4, 8081, "/")).body, w.podIn(1));
    const attacker = unknownNetwork(
      tenantPod("attacker", "tenant-a", 2, 8080, 9000, "2026-01-02T00:00:00Z"),
    );
    await putLater(api, victim, attacker);
    await metricReaches(agent, 'lace_probes_ignored{reason="annotation"}', 1);
    // The reconcile that saw the attacker is done: the kubelet's probe of it at 8081 must not be
    // tagged into the victim's network.
    const events = await assertHolderWithdrawn(t, {
      name: "victim",
      httpPort: 8081,
      tcpPort: 9001,
    });
    assertEventsNameNone(events, "victim", ["attacker", "tenant-a", "net 2"]);
  },
});

Deno.test({
  name:
    "a CNI ADD at an address a pod with malformed network annotations holds is refused for every network",
  ...agentTestOptions,
  async fn() {
    const holder = unknownNetwork(
      tenantPod("holder", "tenant-a", 2, 8080, 9000, "2026-01-01T00:00:00Z"),
    );
    const newcomer = podBeforeAdd("newcomer", 1, 8081, 9001);
    await using t = await startTenantWorld([holder, newcomer], [], [], "default");
    const { w, agent, socket } = t;
    await metricReaches(agent, 'lace_probes_ignored{reason="annotation"}', 1);
    const uid = (newcomer.metadata as { uid: string }).uid;
    for (const networkId of [1, 2]) {
      const add = await plugin("ADD", socket, { name: "newcomer", uid }, {
        network: `net${networkId}`,
        networkId,
      });
      assertAddRefused(add, HELD_BY_ANOTHER_NETWORK, `network ${networkId}: `);
      assert.doesNotMatch(add.result.msg, /holder|tenant-a|net 2/);
    }
    assert.equal((await w.probe(POD_IPV4, 8081, "/")).result, "NO_ROUTE");
    await metricReaches(agent, 'lace_cni_add_refusals_total{reason="address-conflict"}', 2);
  },
});

Deno.test({
  name:
    "a CNI ADD whose network is unknown is refused at an address a pod of another network holds, and the holder keeps its probes",
  ...agentTestOptions,
  async fn() {
    const holder = tenantPod("holder", "tenant-b", 1, 8081, 9001, "2026-01-01T00:00:00Z");
    // Its conf names no network and its annotations name none that exists.
    const newcomer = unknownNetwork(podBeforeAdd("newcomer", 2, 8080, 9000));
    await using t = await startTenantWorld([holder, newcomer], [], [], "default");
    const { w, api, agent, socket } = t;
    await metricReaches(agent, 'lace_probes_ignored{reason="annotation"}', 1);
    const uid = (newcomer.metadata as { uid: string }).uid;
    const add = await plugin("ADD", socket, { name: "newcomer", uid }, {});
    assertAddRefused(add, /network is unknown/);
    assert.doesNotMatch(add.result.msg, /holder|tenant-b|net1/);
    await metricReaches(agent, 'lace_cni_add_refusals_total{reason="address-conflict"}', 1);
    assert.equal((await w.probe(POD_IPV4, 8081, "/")).body, w.podIn(1), "the holder keeps its own");
    assert.equal((await w.probe(POD_IPV6, 9001)).body, w.podIn(1));
    const events = await waitFor(() => {
      const found = eventsWithReason(api, "AttachRefused");
      return found.length >= 1 ? found : undefined;
    }, { message: "an AttachRefused Event on the newcomer" });
    assertEventsNameNone(events, "newcomer", ["holder", "tenant-b", "net1"]);
  },
});
