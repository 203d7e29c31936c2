/**
 * What the agent shows about the kubelet's connects, and to whom, as a real process on the
 * simulated node: per-target hits (`lace targets`), connects that matched no target (metrics,
 * logs, `lace doctor`), reports lost under load, `lace doctor pod`, and the local socket.
 */
import assert from "node:assert/strict";
import { readPinnedCounters } from "../lib/datapath/pins.ts";
import {
  agentTestOptions,
  AgentWorld,
  POD_A,
  POD_IPV4,
  POD_IPV6,
} from "./helpers/agent_process.ts";
import {
  assertReaches,
  laceDoctor,
  laceTargets,
  POD_B,
  startReadyAgent,
} from "./helpers/agent_checks.ts";
import { waitFor } from "./helpers/wait.ts";

/** The hits `lace targets --json` reports for host:port. */
function hitsIn(targets: Awaited<ReturnType<typeof laceTargets>>, host: string, port: number) {
  const t = targets.find((t) => t.address === host && t.port === port);
  assert.ok(t, `${host}:${port} is a target`);
  return { hits: t.hits, age: t.lastHitAgeSeconds };
}

Deno.test({
  name: "lace targets counts the kubelet's connects per target and their age, and an agent " +
    "restart keeps the counts (they live in the pinned map)",
  ...agentTestOptions,
  async fn() {
    await using w = await AgentWorld.create();
    const agent = await startReadyAgent(w, [POD_A]);
    for (let i = 0; i < 3; i++) await w.probe(POD_IPV4, 9000);
    // A connect from another cgroup is not the kubelet's: not counted.
    await w.probe(POD_IPV4, 9000, undefined, "other");
    const before = await laceTargets(["--json", `--agent-socket=${agent.agentSocket}`]);
    assert.deepEqual(hitsIn(before, POD_IPV4, 8080), { hits: 0, age: null });
    const counted = hitsIn(before, POD_IPV4, 9000);
    assert.equal(counted.hits, 3);
    assert.ok(
      counted.age !== null && counted.age !== undefined && counted.age < 30,
      `age ${counted.age}`,
    );

    assert.equal((await agent.stop("SIGTERM")).code, 0);
    const restarted = w.startAgent(["--no-kube-api", `--pods-dir=${w.podsDir}`]);
    await restarted.ready();
    await w.probe(POD_IPV4, 9000);
    const after = await laceTargets(["--json", `--agent-socket=${restarted.agentSocket}`]);
    assert.equal(hitsIn(after, POD_IPV4, 9000).hits, 4);
    assert.equal(hitsIn(after, POD_IPV4, 8080).hits, 0);
  },
});

Deno.test({
  name: "a kubelet connect to a pod's address on a port that is no target is counted per " +
    "network, logged with its pod and listed for lace doctor; the connect itself goes on",
  ...agentTestOptions,
  async fn() {
    await using w = await AgentWorld.create();
    const agent = await startReadyAgent(w, [POD_A]);
    await w.probe(POD_IPV4, 9000);
    // The pod ranges are written within the agent's first tick; wait until a miss is counted.
    await waitFor(async () => {
      assert.equal((await w.probe(POD_IPV4, 8082, "/")).result, "NO_ROUTE");
      return ((await agent.metric('lace_probe_unmatched_total{network_id="1"}')) ?? 0) >= 1;
    }, { message: "an unmatched connect counted" });
    await waitFor(
      () => agent.logs.some((l) => l.includes(`${POD_IPV4}:8082 matched no probe target`)),
      {
        timeout: 15_000,
        message: "the unmatched connect logged (reports are read every 5 s)",
      },
    );
    const { body } = await agent.local("/unmatched");
    const recent = JSON.parse(body) as { address: string; port: number; reports: number }[];
    assert.equal(recent[0].address, POD_IPV4);
    assert.equal(recent[0].port, 8082);
    // lace doctor lists it, and the targets the kubelet never connected to.
    const doctor = await laceDoctor(w, agent) as {
      checks: { name: string; ok: boolean; message: string }[];
    };
    const unmatched = doctor.checks.find((c) => c.name === "unmatched-connects")!;
    assert.equal(unmatched.ok, false);
    assert.match(
      unmatched.message,
      new RegExp(`${POD_IPV4.replaceAll(".", "\\.")}:8082 \\(pod e2e/a\\)`),
    );
    const hits = doctor.checks.find((c) => c.name === "target-hits")!;
    assert.match(hits.message, /never connected to: .*:8080 \(e2e\/a, liveness\)/);
    assert.doesNotMatch(hits.message, new RegExp(`${POD_IPV4.replaceAll(".", "\\.")}:9000 `));
    // Tagged connects count as connects of their network, not as misses.
    assert.ok((await agent.metric('lace_probe_connects_total{network_id="1"}'))! >= 1);
    // A connect from another cgroup is not the kubelet's: not counted.
    const before = await agent.metric('lace_probe_unmatched_total{network_id="1"}') ?? 0;
    await w.probe(POD_IPV4, 8083, "/", "other");
    assert.equal(await agent.metric('lace_probe_unmatched_total{network_id="1"}') ?? 0, before);
  },
});

Deno.test({
  name: "a kubelet connect into an operator's --pod-cidrs range that no known pod holds is " +
    "counted under network id 0 and logged as no pod this agent knows",
  ...agentTestOptions,
  async fn() {
    await using w = await AgentWorld.create();
    // The sim node's pod range; .99 is no pod's (the connect finds no route in the sim node).
    const agent = await startReadyAgent(w, [POD_A], ["--pod-cidrs=10.244.1.0/24,fd00:244::/64"]);
    await waitFor(async () => {
      assert.equal((await w.probe("10.244.1.99", 80)).result, "NO_ROUTE");
      return ((await agent.metric('lace_probe_unmatched_total{network_id="0"}')) ?? 0) >= 1;
    }, { message: "the miss counted under network id 0" });
    await waitFor(
      () =>
        agent.logs.some((l) =>
          l.includes("10.244.1.99:80 matched no probe target") &&
          l.includes("no pod this agent knows")
        ),
      { timeout: 15_000, message: "the miss logged (reports are read every 5 s)" },
    );
    assert.equal(await agent.metric('lace_probe_unmatched_total{network_id="1"}'), 0);
  },
});

Deno.test({
  name: "with the agent frozen, unmatched connects overflow the reports (rate limit, full ring " +
    "buffer) and lose only reports: every connect is counted, every target stays tagged",
  ...agentTestOptions,
  async fn() {
    await using w = await AgentWorld.create();
    const agent = await startReadyAgent(w, [POD_A]);
    await waitFor(async () => {
      await w.probe(POD_IPV4, 8082);
      return readPinnedCounters(w.pinPath).unmatched >= 1n;
    }, { message: "the pod ranges written" });
    const first = await w.probe(POD_IPV4, 9000);
    assert.ok(first.result === "reached" && first.mark, `untagged: ${JSON.stringify(first)}`);
    const before = readPinnedCounters(w.pinPath);
    agent.freeze();
    let misses = 0;
    try {
      // More reports than the rate limit (64/s per CPU) and the ring (128 records) let through.
      const until = Date.now() + 2500;
      while (Date.now() < until) {
        for (let port = 20000; port < 20020; port++, misses++) {
          assert.equal((await w.probe(POD_IPV4, port)).result, "NO_ROUTE");
        }
        // Tagged: its mark, and a connection made into the pod's network, where no other route
        // leads (a pod server that drops one connection after accepting it is not the hook's).
        const tagged = await w.probe(POD_IPV4, 9000);
        const connected = tagged.result === "reached" || /^read failed/.test(tagged.error ?? "");
        assert.ok(connected && tagged.mark === first.mark, `not tagged: ${JSON.stringify(tagged)}`);
      }
    } finally {
      agent.thaw();
    }
    const after = readPinnedCounters(w.pinPath);
    assert.equal(after.unmatched - before.unmatched, BigInt(misses), "every miss is counted");
    assert.ok(after.reportsDropped > before.reportsDropped, `only ${misses} misses: none dropped`);
    // The reports that got through reach the agent once it runs again.
    await waitFor(async () => {
      const recent = JSON.parse((await agent.local("/unmatched")).body) as { port: number }[];
      return recent.some((r) => r.port >= 20000);
    }, { timeout: 15_000, message: "the agent to read the reports left in the ring" });
    await assertReaches(w, 1, 8080, 9000);
  },
});

Deno.test({
  name: "lace doctor pod shows each of the pod's probes with its target, mark, the kubelet's " +
    "hits and last hit, and one probe sent now through the kubelet's cgroup",
  ...agentTestOptions,
  async fn() {
    await using w = await AgentWorld.create();
    const agent = await startReadyAgent(w, [POD_A, POD_B]);
    for (let i = 0; i < 2; i++) await w.probe(POD_IPV4, 9000);
    const out = await laceDoctor(w, agent, ["pod", "e2e/a", `--netns=${w.node.netns}`]) as {
      pod: string;
      probes: {
        probe: string;
        target: string;
        mark: number;
        hits: number;
        lastHitAgeSeconds: number | null;
        result: string;
        probeMark: number;
      }[];
    };
    assert.equal(out.pod, "e2e/a");
    assert.deepEqual(out.probes.map((p) => `${p.probe} ${p.target}`).sort(), [
      `liveness ${POD_IPV4}:8080/healthz`,
      `liveness [${POD_IPV6}]:8080/healthz`,
      `readiness ${POD_IPV4}:9000`,
      `readiness [${POD_IPV6}]:9000`,
    ]);
    const tcp4 = out.probes.find((p) => p.target === `${POD_IPV4}:9000`)!;
    assert.equal(tcp4.hits, 2, "the kubelet's hits, read before the doctor's own probe");
    assert.ok(tcp4.lastHitAgeSeconds !== null && tcp4.lastHitAgeSeconds < 30);
    for (const p of out.probes) {
      assert.equal(p.result, "reached", JSON.stringify(p));
      assert.equal(p.probeMark, p.mark, "the doctor's probe was tagged like the kubelet's");
    }
  },
});

Deno.test({
  name: "/targets is refused on the node IP and served on the root-only local socket",
  ...agentTestOptions,
  async fn() {
    await using w = await AgentWorld.create();
    await w.writePod(POD_A);
    // The agent runs in the simulated node's namespace and listens on the node's own address.
    const nodeIp = "10.99.1.1", port = 9808;
    const agent = w.startAgent(["--no-kube-api", `--pods-dir=${w.podsDir}`], w.cgroups.kubelet, {
      netns: w.node.netns,
      metricsAddr: `${nodeIp}:${port}`,
    });
    await agent.ready();
    // Anyone on the node's network: metrics and health, but no pods, addresses or networks.
    const fromNetwork = (path: string) =>
      w.other.probe({ host: nodeIp, port, timeoutMs: 2000, http: path });
    const targets = await fromNetwork("/targets");
    assert.equal(targets.httpStatus, 404, JSON.stringify(targets));
    assert.doesNotMatch(targets.body ?? "", /10\.244|e2e\/a|net1/);
    for (const path of ["/healthz", "/readyz"]) {
      assert.equal((await fromNetwork(path)).httpStatus, 200, path);
    }
    const metrics = await fromNetwork("/metrics");
    assert.equal(metrics.httpStatus, 200);
    assert.match(metrics.body ?? "", /^lace_probe_targets\{/m);
    // Nor do the metrics name them: networks appear by id (a network's name is a tenant's).
    assert.doesNotMatch(metrics.body ?? "", /10\.244|e2e|net1/);
    assert.match(metrics.body ?? "", /^lace_probe_targets\{family="ipv4",network_id="1"\} [1-9]/m);
    // Root on the node: the socket, 0600 in a 0700 directory, has the agent's whole view.
    assert.equal(Deno.statSync(agent.agentSocket).mode! & 0o777, 0o600);
    const local = await agent.local("/targets");
    assert.equal(local.status, 200);
    const pods = new Set((JSON.parse(local.body) as { pod: string }[]).map((t) => t.pod));
    assert.deepEqual([...pods], ["e2e/a"]);
  },
});
