/**
 * A pod's new sandbox, played against the real agent process on the simulated node: the runtime
 * made pod "a" (network 1) a new sandbox (the old one ended: a runtime or node restart, its pause
 * process gone) and the CNI path attached it at the simulated pods' address,
 * while the API (here the pods directory) still names its old sandbox's 10.244.1.30 until the
 * kubelet reports the new one. The kubelet probes "a" at the new address at once. Were only the
 * API's address held, a pod of network 2 brought to the new address would be let in, and the
 * kubelet's probes of "a" there would be tagged into network 2 and answered by that pod.
 */
import assert from "node:assert/strict";
import {
  agentTestOptions,
  AgentWorld,
  POD_IPV4,
  POD_IPV6,
  podManifest,
} from "./helpers/agent_process.ts";
import { plugin, podBeforeAdd } from "./helpers/tenant_world.ts";

Deno.test({
  name:
    "a pod's new sandbox holds its address while the API still names the old one, so a pod of another network is refused there and the kubelet's probes of the pod land in no other network",
  ...agentTestOptions,
  async fn() {
    await using w = await AgentWorld.create();
    w.addressSharing = "default";
    // "a" probes tcp 9001; so does "b", which awaits its ADD.
    const a = podManifest({
      name: "a",
      networkId: 1,
      httpPort: 8080,
      tcpPort: 9001,
      ips: ["10.244.1.30"],
    });
    const b = podBeforeAdd("b", 2, 8081, 9001);
    for (const pod of [a, b]) await w.writePod(pod);
    const socket = `${w.podsDir}/run/cni.sock`;
    const agent = w.startAgent([
      "--no-kube-api",
      `--pods-dir=${w.podsDir}`,
      `--cni-socket=${socket}`,
    ]);
    await agent.ready(60_000);
    const addA = await plugin("ADD", socket, { name: "a", uid: "uid-a" }, {
      network: "net1",
      networkId: 1,
    }, [POD_IPV4, POD_IPV6]);
    assert.equal(addA.code, 0, addA.stdout + addA.stderr);
    const addB = await plugin("ADD", socket, { name: "b", uid: "uid-b" }, {
      network: "net2",
      networkId: 2,
    }, [POD_IPV4, POD_IPV6]);
    // The attack's effect first: the kubelet's probe of "a" must not be answered in network 2.
    for (const host of [POD_IPV4, POD_IPV6]) {
      const res = await w.probe(host, 9001);
      assert.notEqual(res.body?.trim(), w.podIn(2), `${host}:9001: ${JSON.stringify(res)}`);
      assert.ok(!res.mark, `${host}:9001 tagged with mark ${res.mark}: ${JSON.stringify(res)}`);
    }
    assert.equal(addB.code, 1, addB.stdout + addB.stderr);
    assert.equal(addB.result.code, 101);
    assert.match(addB.result.msg, /already used on this node/);
  },
});
