/**
 * Lifecycle hooks on the simulated node, with the real agent process and the kernel deciding
 * where each of the kubelet stand-in's connects lands: a preStop httpGet hook whose port no
 * probe uses is delivered into its own pod's network (and, with --lifecycle-hooks=false, goes to
 * the node's own routing and fails, as it does without Lace), and a hook aimed at another pod's
 * address is never a target, so that pod's probes keep landing in its own network.
 */
import assert from "node:assert/strict";
import {
  agentTestOptions,
  AgentWorld,
  POD_IPV4,
  POD_IPV6,
  podManifest,
} from "./helpers/agent_process.ts";
import { laceDoctor, laceTargets, startReadyAgent } from "./helpers/agent_checks.ts";
import { waitFor } from "./helpers/wait.ts";

/** `podManifest` with `lifecycle` on its container and `ips` as its addresses. */
function withHook(
  opts: Parameters<typeof podManifest>[0],
  lifecycle: Record<string, unknown>,
): Record<string, unknown> {
  const pod = podManifest(opts);
  const [container] = (pod.spec as { containers: Record<string, unknown>[] }).containers;
  container.lifecycle = lifecycle;
  return pod;
}

/** What `lace targets --json` says each key of the pod serves: "address port probe". */
async function served(agentSocket: string, pod: string): Promise<string[]> {
  const targets = await laceTargets(["--json", `--agent-socket=${agentSocket}`]) as {
    address: string;
    port: number;
    pod?: string;
    probe?: string;
  }[];
  return targets.filter((t) => t.pod === pod).map((t) => `${t.address} ${t.port} ${t.probe}`)
    .sort();
}

Deno.test({
  name:
    "a preStop hook's port that no probe uses is tagged into its pod's network, and is not with --lifecycle-hooks=false",
  ...agentTestOptions,
  async fn() {
    await using w = await AgentWorld.create();
    // The pod of network 2 probes 8081 and 9001; its preStop hook alone uses 8082.
    const pod = withHook(
      { name: "hooked", networkId: 2, httpPort: 8081, tcpPort: 9001 },
      { preStop: { httpGet: { port: 8082, path: "/drain" } } },
    );
    const agent = await startReadyAgent(w, [pod]);
    for (const host of [POD_IPV4, POD_IPV6]) {
      const res = await w.probe(host, 8082, "/drain");
      assert.equal(res.result, "reached", `${host}:8082: ${JSON.stringify(res)}`);
      assert.equal(res.body?.trim(), w.podIn(2), `${host}:8082 lands in network 2`);
      assert.equal(res.httpStatus, 200);
    }
    assert.deepEqual(await served(agent.agentSocket, "e2e/hooked"), [
      `${POD_IPV4} 8081 liveness`,
      `${POD_IPV4} 8082 preStop`,
      `${POD_IPV4} 9001 readiness`,
      `${POD_IPV6} 8081 liveness`,
      `${POD_IPV6} 8082 preStop`,
      `${POD_IPV6} 9001 readiness`,
    ]);
    // The doctor names the hook and only connects to it: a GET would run the pod's preStop.
    const doctor = await laceDoctor(w, agent, ["pod", "e2e/hooked", `--netns=${w.node.netns}`]) as {
      probes: { probe: string; target: string; result: string; httpStatus: number | null }[];
    };
    const hooks = doctor.probes.filter((p) => p.probe === "preStop");
    assert.deepEqual(hooks.map((p) => `${p.target} ${p.result} ${p.httpStatus}`), [
      `${POD_IPV4}:8082/drain reached null`,
      `[${POD_IPV6}]:8082/drain reached null`,
    ]);
    // The same node and map under an agent that leaves hooks alone: the hook's port leaves the
    // map, and the kubelet's connect to it takes the node's own route (none here) and fails.
    assert.equal((await agent.stop("SIGTERM")).code, 0);
    const off = w.startAgent([
      "--no-kube-api",
      `--pods-dir=${w.podsDir}`,
      "--lifecycle-hooks=false",
    ]);
    await off.ready();
    for (const host of [POD_IPV4, POD_IPV6]) {
      await waitFor(async () => (await w.probe(host, 8082, "/drain")).result === "NO_ROUTE", {
        message: `${host}:8082 untagged once hooks are off`,
      });
      const probe = await w.probe(host, 9001);
      assert.equal(probe.body?.trim(), w.podIn(2), `${host}:9001, a probe, still lands`);
    }
    assert.ok(
      off.logs.some((l) => l.includes("Lifecycle hooks are not probe targets")),
      "the agent says at start that hooks are off",
    );
  },
});

Deno.test({
  name:
    "a hook aimed at another pod's address is never a target, and that pod's probes keep landing in its own network",
  ...agentTestOptions,
  async fn() {
    await using w = await AgentWorld.create();
    // The victim, in network 2, probes 8081 at the shared simulated addresses.
    const victim = podManifest({ name: "victim", networkId: 2, httpPort: 8081, tcpPort: 9001 });
    // The attacker, in network 1 at an address of its own, points its hooks at the victim's
    // address and probe port: were that a target of network 1, the key would be claimed by two
    // networks and the victim's probe to it tagged for neither (or for the attacker's network).
    const attacker = withHook(
      {
        name: "attacker",
        networkId: 1,
        httpPort: 8080,
        tcpPort: 9000,
        ips: ["10.244.1.20"],
      },
      {
        postStart: { httpGet: { host: POD_IPV4, port: 8081, path: "/steal" } },
        preStop: { httpGet: { host: POD_IPV6, port: 8081, path: "/steal" } },
      },
    );
    const agent = await startReadyAgent(w, [victim, attacker]);
    for (const host of [POD_IPV4, POD_IPV6]) {
      const res = await w.probe(host, 8081, "/healthz");
      assert.equal(res.result, "reached", `${host}:8081: ${JSON.stringify(res)}`);
      assert.equal(res.body?.trim(), w.podIn(2), `${host}:8081 lands in the victim's network`);
    }
    const attackerKeys = await served(agent.agentSocket, "e2e/attacker");
    assert.deepEqual(attackerKeys, ["10.244.1.20 8080 liveness", "10.244.1.20 9000 readiness"]);
    await waitFor(
      () =>
        ["postStart", "preStop"].every((hook) =>
          agent.logs.some((l) =>
            l.includes("e2e/attacker") && l.includes(`${hook} hook of container`) &&
            l.includes("which is not one of the pod's IPs")
          )
        ),
      { message: "the agent to report both of the attacker's hooks" },
    );
  },
});
