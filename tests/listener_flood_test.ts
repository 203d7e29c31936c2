/**
 * No pod may make the kubelet restart the agent, again and again. Every pod can reach the
 * node-IP listener: were its connection cap global, keep-alive connections that keep sending
 * requests never evicted, and the chart's liveness and readiness probes on that listener, 64
 * connections each sending a request every 0.5 s would fail every health request. Nor may a
 * 16 KiB head sent one byte at a time cost a copy and a rescan of the pending head per read.
 *
 * This test plays that attacker on loopback against a real agent (each source address in
 * 127.0.0.0/8 stands for a pod) and checks what the kubelet and the operator see meanwhile. How
 * fast health answers during the flood is a figure of `deno task bench` (listener-flood), not a
 * pass/fail here.
 */
import assert from "node:assert/strict";
import { agentTestOptions, AgentWorld, freeLoopbackAddr, POD_A } from "./helpers/agent_process.ts";
import { POD_B, startReadyAgent } from "./helpers/agent_checks.ts";
import { holdSilent, probeOnce, requestFrom, startFlood } from "./helpers/http_flood.ts";
import { waitFor } from "./helpers/wait.ts";
import { DEFAULT_HTTP_LIMITS } from "../lib/agent/http/server.ts";

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

Deno.test({
  name: "one source opening more connections than its cap on the node listener is refused " +
    "beyond it, saying why (503, counted, logged), and health there is answered for another source",
  ...agentTestOptions,
  async fn() {
    await using w = await AgentWorld.create();
    const agent = await startReadyAgent(w, [POD_A]);
    const [hostname, portText] = agent.metricsAddr.split(":");
    const port = Number(portText);
    const attacker = "127.0.0.2";
    // The node listener's cap a source: connections that never send a head are never idle, so
    // none of them can make room for one more from the same source.
    const cap = DEFAULT_HTTP_LIMITS.maxConnectionsPerPeer;
    // The header timeout (10 s) closes silent connections: a round that load stretched past it
    // shows nothing, and is played again.
    const round = await waitFor(async () => {
      using held = await holdSilent(hostname, port, attacker, cap);
      const beyond = await requestFrom(hostname, port, attacker, "/healthz");
      const health = await probeOnce(agent.metricsAddr, "/healthz");
      return held.closed() === 0 && { beyond, health };
    }, { timeout: 60_000, interval: 100, message: `${cap} connections from ${attacker} held` });
    assert.match(
      round.beyond,
      /^HTTP\/1\.1 503 [^]*Too many connections from your address/,
      `connection ${cap + 1} from ${attacker}`,
    );
    assert.equal(round.health, 200, "/healthz from 127.0.0.1 while the attacker is at its cap");
    const sample = 'lace_listener_capped_total{listener="http",cap="peer",outcome="refused"}';
    assert.ok(((await agent.metric(sample)) ?? 0) >= 1, `${sample} counted`);
    const refusal = (line: string) => {
      const p = line.startsWith("{") ? JSON.parse(line).properties ?? {} : {};
      return p.name === "http" && p.outcome === "connection refused" && p.at === "one peer's cap";
    };
    await waitFor(() => agent.logs.some(refusal), {
      message: "the refusal at the peer's cap logged",
    });
  },
});
