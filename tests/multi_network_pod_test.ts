/**
 * A tenant asks for a second interface in another Lace network (Multus attaches what the pod's
 * own `k8s.v1.cni.cncf.io/networks` annotation names, each attachment's conf chaining `lace` with
 * its network). Were the last attachment that named a network the pod's network for every
 * target, its eth0's address too (also when eth0's conf named none), the kubelet's probes of the
 * pod (a path of its author's choosing) would be tagged into the second network at an address
 * that network's own pods may hold, and a pod of the second network could take that address.
 * Each attachment's address is the network its own conf names. Played against the
 * real agent process on the simulated node (two overlay networks whose pods share one IPv4 and
 * one IPv6 address) with the chained `lace` plugin run as the runtime runs it.
 */
import assert from "node:assert/strict";
import { agentTestOptions, POD_IPV4 } from "./helpers/agent_process.ts";
import {
  assertAddRefused,
  HELD_BY_ANOTHER_NETWORK,
  metricReaches,
  plugin,
  podBeforeAdd,
  startTenantWorld,
} from "./helpers/tenant_world.ts";

/** The attack, with the attacker's eth0 conf naming network 1 or no network. */
async function secondInterface(primary: "names network 1" | "names no network") {
  // The attacker's pod, in network 1 by its trusted annotations (probes on 8081 and 9001),
  // and a victim of network 2 whose sandbox comes later; neither has an address in the API.
  const attacker = podBeforeAdd("attacker", 1, 8081, 9001);
  const victim = podBeforeAdd("victim", 2, 8080, 9000);
  await using t = await startTenantWorld([attacker, victim], [], [], "default");
  const { w, agent, socket } = t;
  const uid = (pod: Record<string, unknown>) => (pod.metadata as { uid: string }).uid;
  const eth0 = await plugin(
    "ADD",
    socket,
    { name: "attacker", uid: uid(attacker) },
    primary === "names network 1" ? { network: "net1", networkId: 1 } : {},
  );
  assert.equal(eth0.code, 0, eth0.stdout + eth0.stderr);
  // Multus attaches the second interface the pod asked for, in network 2, elsewhere.
  const second = await plugin(
    "ADD",
    socket,
    { name: "attacker", uid: uid(attacker) },
    { network: "net2", networkId: 2 },
    ["10.244.9.9"],
    "net1",
  );
  assertAddRefused(second, /names a Lace network other than the one the node attached/);
  // The kubelet's probe of the attacker lands in its own network, never in network 2.
  assert.equal((await w.probe(POD_IPV4, 8081, "/")).body, w.podIn(1));
  // And network 2's pod cannot take the attacker's address.
  const add = await plugin("ADD", socket, { name: "victim", uid: uid(victim) }, {
    network: "net2",
    networkId: 2,
  });
  assertAddRefused(add, HELD_BY_ANOTHER_NETWORK);
  assert.equal((await w.probe(POD_IPV4, 8081, "/")).body, w.podIn(1));
  await metricReaches(agent, 'lace_cni_add_refusals_total{reason="second-network"}', 1);
  await metricReaches(agent, 'lace_cni_add_refusals_total{reason="address-conflict"}', 1);
}

Deno.test({
  name:
    "a pod's second interface in another Lace network is refused when its eth0's conf names network 1, so the kubelet's probes of the pod stay in its own network and no pod of the second takes its address",
  ...agentTestOptions,
  fn: () => secondInterface("names network 1"),
});

Deno.test({
  name:
    "a pod's second interface in another Lace network is refused when its eth0's conf names no network, so the kubelet's probes of the pod stay in its own network and no pod of the second takes its address",
  ...agentTestOptions,
  fn: () => secondInterface("names no network"),
});
