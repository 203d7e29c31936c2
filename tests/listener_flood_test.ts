/**
 * Issue 24, finding 1: any pod could make the kubelet restart the agent, again and again. The
 * node-IP listener's connection cap (64) was global, keep-alive connections that kept sending
 * requests were never evicted, and the chart's liveness and readiness probes used that listener:
 * 64 connections each sending a request every 0.5 s made 20 of 20 health requests fail. Each
 * read also copied and rescanned the pending head (a 16 KiB head sent one byte at a time).
 *
 * This test plays that attacker on loopback against a real agent (each source address in
 * 127.0.0.0/8 stands for a pod) and checks what the kubelet and the operator see meanwhile. How
 * fast health answers during the flood is a figure of `deno task bench` (listener-flood), not a
 * pass/fail here.
 */
import assert from "node:assert/strict";
import { agentTestOptions, AgentWorld, freeLoopbackAddr, POD_A } from "./helpers/agent_process.ts";
import { POD_B, startReadyAgent } from "./helpers/agent_checks.ts";
import { probeOnce, startFlood } from "./helpers/http_flood.ts";
import { waitFor } from "./helpers/wait.ts";

Deno.test({
  name: "under a flood of keep-alive connections and a byte-at-a-time head on the node listener, " +
    "the agent stays live, ready and reconciling",
  ...agentTestOptions,
  async fn() {
    await using w = await AgentWorld.create();
    // The chart's probes of the agent go to the loopback health listener (host: 127.0.0.1).
    const healthAddr = freeLoopbackAddr();
    const agent = await startReadyAgent(w, [POD_A], [`--health-addr=${healthAddr}`]);
    const [hostname, port] = agent.metricsAddr.split(":");
    // 64 keep-alive connections from 64 pods, a request every 0.5 s each, and a 16 KiB head
    // dribbled one byte per write from another.
    const flood = startFlood({
      hostname,
      port: Number(port),
      connections: 64,
      periodMs: 500,
      sources: 64,
      dribbleBytes: 16 * 1024,
    });
    try {
      await waitFor(() => flood.answered() >= 128, {
        timeout: 15_000,
        message: "the flood's connections answered twice over",
      });
      // The kubelet: liveness and readiness, each on a new connection, all answered 200.
      const statuses: number[] = [];
      for (let i = 0; i < 20; i++) {
        statuses.push(await probeOnce(healthAddr, i % 2 ? "/readyz" : "/healthz"));
      }
      assert.deepEqual(statuses, Array(20).fill(200), "health answers during the flood");
      // Reconciling: a new pod's targets are in the agent's view.
      await w.writePod(POD_B);
      await waitFor(async () => (await agent.local("/targets")).body.includes('"e2e/b"'), {
        timeout: 15_000,
        message: "pod b's targets in the agent's view during the flood",
      });
      // A scraper from another address still gets its metrics: the cap makes room for it.
      assert.equal(await probeOnce(agent.metricsAddr, "/metrics"), 200, "a scrape");
      // The byte-at-a-time head is answered too, and the flood really held the listener.
      await waitFor(() => flood.stats.dribbled >= 1, {
        timeout: 30_000,
        message: "the 16 KiB head sent one byte at a time answered",
      });
      assert.equal(await probeOnce(healthAddr, "/healthz"), 200, "live after the dribble");
      // Never silent: the connections closed to make room are counted.
      const evicted = await agent.metric(
        'lace_listener_capped_total{listener="http",cap="connections",outcome="evicted"}',
      );
      assert.ok((evicted ?? 0) >= 1, `evictions counted: ${evicted}`);
    } finally {
      flood.stop();
    }
  },
});
