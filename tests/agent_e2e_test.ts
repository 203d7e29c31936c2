/**
 * The agent end to end, as a real process on the simulated node: pods from
 * the directory source, a kubelet-like prober in the kubelet cgroup, and the
 * real kernel deciding where each connect goes.
 */
import { join } from "node:path";
import assert from "node:assert/strict";
import { readPinnedCounters, readPinnedTargets } from "../lib/datapath/pins.ts";
import { keyId } from "../lib/datapath/probe_map.ts";
import {
  type AgentProcess,
  agentTestOptions,
  AgentWorld,
  POD_A,
  POD_IPV4,
  POD_IPV6,
  podManifest,
} from "./helpers/agent_process.ts";
import { waitFor } from "./helpers/wait.ts";

const podB = podManifest({ name: "b", networkId: 2, httpPort: 8081, tcpPort: 9001 });

/** Every probe of a pod manifest's container, on both addresses: [host, port, http path?]. */
const probesOf = (httpPort: number, tcpPort: number): [string, number, string | undefined][] =>
  [POD_IPV4, POD_IPV6].flatMap((ip) =>
    [[ip, httpPort, "/healthz"], [ip, tcpPort, undefined]] as [
      string,
      number,
      string | undefined,
    ][]
  );

async function assertReaches(w: AgentWorld, networkId: number, httpPort: number, tcpPort: number) {
  for (const [host, port, http] of probesOf(httpPort, tcpPort)) {
    const res = await w.probe(host, port, http);
    assert.equal(
      res.result,
      "reached",
      `${host}:${port} from the kubelet cgroup: ${JSON.stringify(res)}`,
    );
    assert.equal(
      res.body?.trim(),
      w.podIn(networkId),
      `${host}:${port} lands in network ${networkId}`,
    );
    if (http) assert.equal(res.httpStatus, 200);
  }
}

/** Writes pods to w's pods directory, starts an agent on it (no API server), waits until ready. */
async function startReadyAgent(
  w: AgentWorld,
  pods: Record<string, unknown>[],
  extra: string[] = [],
): Promise<AgentProcess> {
  for (const pod of pods) await w.writePod(pod);
  const agent = w.startAgent(["--no-kube-api", `--pods-dir=${w.podsDir}`, ...extra]);
  await agent.ready();
  return agent;
}

Deno.test({
  name: "the agent registers every probe of the directory's pods across overlapping networks",
  ...agentTestOptions,
  async fn() {
    await using w = await AgentWorld.create();
    await startReadyAgent(w, [POD_A, podB]);
    await assertReaches(w, 1, 8080, 9000);
    await assertReaches(w, 2, 8081, 9001);
    for (const [host, port, http] of [...probesOf(8080, 9000), ...probesOf(8081, 9001)]) {
      const res = await w.probe(host, port, http, "other");
      assert.notEqual(
        res.result,
        "reached",
        `${host}:${port} from another cgroup must not be tagged`,
      );
    }
    // A port no probe uses is not tagged, even from the kubelet.
    assert.equal((await w.probe(POD_IPV4, 8082, "/")).result, "NO_ROUTE");
  },
});

Deno.test({
  name:
    "a pod in a YAML manifest is registered: the agent loads its YAML parser with the first one",
  ...agentTestOptions,
  async fn() {
    await using w = await AgentWorld.create();
    await startReadyAgent(w, [POD_A]);
    // JSON is YAML too: the .yaml name is what sends the file through the YAML parser.
    const tmp = join(w.podsDir, ".b.tmp");
    await Deno.writeTextFile(tmp, JSON.stringify(podB));
    await Deno.rename(tmp, join(w.podsDir, "b.yaml"));
    await waitFor(async () => (await w.probe(POD_IPV4, 8081, "/")).result === "reached", {
      timeout: 10_000,
      message: "the YAML manifest's pod reachable",
    });
    await assertReaches(w, 2, 8081, 9001);
  },
});

Deno.test({
  name: "a pod added to the directory becomes reachable and a removed one loses its targets",
  ...agentTestOptions,
  async fn() {
    await using w = await AgentWorld.create();
    const agent = await startReadyAgent(w, [POD_A]);
    const sample = 'lace_probe_targets{family="ipv4",network="net2"}';
    assert.equal(await agent.metric(sample), undefined);

    await w.writePod(podB);
    await waitFor(async () => (await w.probe(POD_IPV4, 8081, "/")).result === "reached", {
      timeout: 10_000,
      message: "pod b reachable",
    });
    await assertReaches(w, 2, 8081, 9001);
    assert.equal(await agent.metric(sample), 2);
    assert.ok((await agent.metric('lace_connects_tagged_total{family="ipv4"}'))! >= 1);

    await w.removePod("b");
    await waitFor(async () => (await w.probe(POD_IPV4, 8081, "/")).result === "NO_ROUTE", {
      timeout: 10_000,
      message: "pod b's targets gone",
    });
    const { body } = await agent.local("/targets");
    const pods = new Set((JSON.parse(body) as { pod: string }[]).map((t) => t.pod));
    assert.deepEqual([...pods], ["e2e/a"]);
    // The series of a network without targets is gone, not stuck at its last value.
    assert.equal(await agent.metric(sample), undefined);
    assert.equal(await agent.metric('lace_probe_targets{family="ipv4",network="net1"}'), 2);
    await assertReaches(w, 1, 8080, 9000);
  },
});

/** `lace doctor --json` against w's pins, kubelet cgroup and agent. */
async function laceDoctor(w: AgentWorld, agent: AgentProcess, sub: string[] = []) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      new URL("../main.ts", import.meta.url).pathname,
      "doctor",
      ...sub,
      "--json",
      `--pin-path=${w.pinPath}`,
      `--kubelet-cgroup=${w.cgroups.kubelet}`,
      `--agent-socket=${agent.agentSocket}`,
    ],
    stdout: "piped",
    stderr: "inherit",
  }).output();
  return JSON.parse(new TextDecoder().decode(out.stdout));
}

async function laceTargets(args: string[]) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL("../main.ts", import.meta.url).pathname, "targets", ...args],
    stdout: "piped",
    stderr: "inherit",
  }).output();
  assert.equal(out.code, 0);
  return JSON.parse(new TextDecoder().decode(out.stdout)) as {
    family: string;
    address: string;
    port: number;
    networkId: number;
    mark: number;
    pod?: string;
    hits?: number;
    lastHitAgeSeconds?: number | null;
  }[];
}

Deno.test({
  name:
    "after kill -9 probes keep working, and a restarted agent removes stale entries with no gap",
  ...agentTestOptions,
  async fn() {
    await using w = await AgentWorld.create();
    const first = await startReadyAgent(w, [POD_A, podB]);
    await first.stop("SIGKILL");
    await assertReaches(w, 1, 8080, 9000);
    await assertReaches(w, 2, 8081, 9001);

    await w.removePod("b");
    const aKeys = readPinnedTargets(w.pinPath).filter((e) => e.value.networkId === 1).map((e) =>
      keyId(e.key)
    );
    assert.equal(aKeys.length, 4);
    const second = w.startAgent(["--no-kube-api", `--pods-dir=${w.podsDir}`]);
    // Watch the map while the new agent starts: pod a's entries must never disappear.
    let gaps = 0;
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        const now = new Set(readPinnedTargets(w.pinPath).map((e) => keyId(e.key)));
        if (!aKeys.every((k) => now.has(k))) gaps++;
        await new Promise((r) => setTimeout(r, 2));
      }
    })();
    await second.ready();
    await waitFor(() => readPinnedTargets(w.pinPath).length === 4, {
      timeout: 10_000,
      message: "pod b's stale entries removed",
    });
    watching = false;
    await watcher;
    assert.equal(gaps, 0, "pod a's targets were missing from the map during the restart");
    await assertReaches(w, 1, 8080, 9000);
    assert.equal((await w.probe(POD_IPV4, 8081, "/")).result, "NO_ROUTE");
  },
});

Deno.test({
  name: "/readyz waits for the kubelet cgroup to exist, then the agent attaches and is ready",
  ...agentTestOptions,
  async fn() {
    await using w = await AgentWorld.create();
    await w.writePod(POD_A);
    const late = `${w.cgroups.root}/late-kubelet`;
    const agent = w.startAgent(["--no-kube-api", `--pods-dir=${w.podsDir}`], late);
    try {
      const notReady = await waitFor(async () => {
        const r = await agent.get("/readyz");
        return r.status === 503 ? r : undefined;
      }, { timeout: 10_000, message: "a /readyz answer" });
      assert.match(notReady.body, /not ready/);
      assert.equal(await agent.metric('lace_attached{program="connect4"}'), 0);
      await Deno.mkdir(late);
      await agent.ready(10_000);
      assert.equal(await agent.metric('lace_attached{program="connect4"}'), 1);
      // The prober joins the new cgroup: its connects are now the kubelet's.
      const { Prober } = await import("../lib/doctor/prober.ts");
      await using prober = await Prober.start({ netns: w.node.netns, cgroup: late });
      const res = await prober.probe({ host: POD_IPV4, port: 8080, timeoutMs: 1000, http: "/" });
      assert.equal(res.result, "reached");
    } finally {
      await agent.stop("SIGKILL");
      await Deno.remove(late).catch(() => {});
    }
  },
});

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
      return ((await agent.metric('lace_probe_unmatched_total{network="net1"}')) ?? 0) >= 1;
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
    assert.ok((await agent.metric('lace_probe_connects_total{network="net1"}'))! >= 1);
    // A connect from another cgroup is not the kubelet's: not counted.
    const before = await agent.metric('lace_probe_unmatched_total{network="net1"}') ?? 0;
    await w.probe(POD_IPV4, 8083, "/", "other");
    assert.equal(await agent.metric('lace_probe_unmatched_total{network="net1"}') ?? 0, before);
  },
});

Deno.test({
  name: "a kubelet connect into an operator's --pod-cidrs range that no known pod holds is " +
    "counted under network unknown and logged as no pod this agent knows",
  ...agentTestOptions,
  async fn() {
    await using w = await AgentWorld.create();
    // The sim node's pod range; .99 is no pod's (the connect finds no route in the sim node).
    const agent = await startReadyAgent(w, [POD_A], ["--pod-cidrs=10.244.1.0/24"]);
    await waitFor(async () => {
      assert.equal((await w.probe("10.244.1.99", 80)).result, "NO_ROUTE");
      return ((await agent.metric('lace_probe_unmatched_total{network="unknown"}')) ?? 0) >= 1;
    }, { message: "the miss counted under network unknown" });
    await waitFor(
      () =>
        agent.logs.some((l) =>
          l.includes("10.244.1.99:80 matched no probe target") &&
          l.includes("no pod this agent knows")
        ),
      { timeout: 15_000, message: "the miss logged (reports are read every 5 s)" },
    );
    assert.equal(await agent.metric('lace_probe_unmatched_total{network="net1"}'), 0);
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
        assert.equal((await w.probe(POD_IPV4, 9000)).result, "reached", "the target stays tagged");
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
    const agent = await startReadyAgent(w, [POD_A, podB]);
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
  name: "SIGTERM stops the agent cleanly and leaves the program, links and map pinned",
  ...agentTestOptions,
  async fn() {
    await using w = await AgentWorld.create();
    const agent = await startReadyAgent(w, [POD_A]);
    const fromAgent = await laceTargets(["--json", `--agent-socket=${agent.agentSocket}`]);
    assert.equal(fromAgent.length, 4);
    assert.ok(fromAgent.every((t) => t.pod === "e2e/a" && t.networkId === 1 && t.mark === 0x11000));
    const status = await agent.stop("SIGTERM");
    assert.equal(status.code, 0, agent.logs.join("\n"));
    assert.ok(agent.logs.some((l) => l.includes("pinned")), "it says what it leaves in place");
    const pins = [...Deno.readDirSync(w.pinPath)].map((e) => e.name).sort();
    assert.deepEqual(pins, ["abi2", "link_connect4", "link_connect6"]);
    const maps = [...Deno.readDirSync(`${w.pinPath}/abi2`)].map((e) => e.name).sort();
    assert.deepEqual(maps, ["counters", "info", "probe_targets"]);
    await assertReaches(w, 1, 8080, 9000);
    // With no agent running, `lace targets` reads the pinned map (and knows no pods).
    const fromMap = await laceTargets([
      "--json",
      `--pin-path=${w.pinPath}`,
      `--agent-socket=${agent.agentSocket}`,
    ]);
    assert.deepEqual(
      fromMap.map((t) => `${t.family} ${t.address} ${t.port} ${t.networkId} ${t.pod}`).sort(),
      fromAgent.map((t) => `${t.family} ${t.address} ${t.port} ${t.networkId} undefined`).sort(),
    );
  },
});

Deno.test({
  name:
    "lace uninstall detaches Lace's programs and removes its pins of every layout, and nothing else",
  ...agentTestOptions,
  async fn() {
    await using w = await AgentWorld.create();
    const agent = await startReadyAgent(w, [POD_A]);
    assert.equal((await agent.stop("SIGTERM")).code, 0);
    // Old-layout pins an interrupted migration can leave: flat (the release before layouts
    // were versioned) and another layout's directory.
    const { BpfObject } = await import("../lib/datapath/libbpf/object.ts");
    const { bpfObjectBytes } = await import("../lib/datapath/bpf_object.ts");
    await Deno.mkdir(`${w.pinPath}/abi7`);
    for (const dir of [w.pinPath, `${w.pinPath}/abi7`]) {
      using old = BpfObject.openMemory(bpfObjectBytes());
      for (const map of ["probe_targets", "counters", "info"]) old.setPinPath(map, `${dir}/${map}`);
      old.load();
    }

    // Another loader's program on the same cgroup, with its own pins: it must survive.
    const { Datapath } = await import("../lib/datapath/loader.ts");
    const { uninstall } = await import("../lib/datapath/pins.ts");
    const { testPinPath } = await import("./helpers/sim_world.ts");
    const { markFor, defaultConfig } = await import("../lib/config.ts");
    const otherPins = testPinPath();
    try {
      using other = Datapath.open({ pinPath: otherPins });
      other.attach(w.cgroups.kubelet);
      other.store.put({
        key: { family: "ipv4", address: POD_IPV4, port: 8081 },
        value: { networkId: 2, mark: markFor(defaultConfig(), 2) },
      });
      assert.equal((await w.probe(POD_IPV4, 8080, "/")).body, w.podIn(1));

      const out = await new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "-A",
          new URL("../main.ts", import.meta.url).pathname,
          "uninstall",
          `--pin-path=${w.pinPath}`,
        ],
        stdout: "piped",
        stderr: "piped",
      }).output();
      assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
      const said = new TextDecoder().decode(out.stdout);
      for (
        const pin of [
          "link_connect4",
          "link_connect6",
          ...["abi2/", "abi7/", ""].flatMap((d) =>
            ["probe_targets", "counters", "info"].map((m) => d + m)
          ),
          "abi2",
          "abi7",
        ]
      ) {
        assert.ok(said.includes(`${w.pinPath}/${pin}\n`), `${pin} in ${said}`);
      }
      assert.throws(() => Deno.statSync(w.pinPath), Deno.errors.NotFound);
      await waitFor(async () => (await w.probe(POD_IPV4, 8080, "/")).result === "NO_ROUTE", {
        timeout: 10_000,
        message: "Lace's program detached",
      });
      assert.equal(
        (await w.probe(POD_IPV4, 8081, "/")).body,
        w.podIn(2),
        "the other program still tags",
      );
    } finally {
      uninstall(otherPins);
      await Deno.remove(otherPins).catch(() => {});
    }
  },
});

Deno.test({
  name: "the periodic resync repairs an entry deleted or changed behind the agent's back",
  ...agentTestOptions,
  async fn() {
    await using w = await AgentWorld.create();
    await startReadyAgent(w, [POD_A], ["--resync-interval=1s"]);
    const { Datapath } = await import("../lib/datapath/loader.ts");
    const entries = readPinnedTargets(w.pinPath);
    const victim = entries.find((e) => e.key.family === "ipv4" && e.key.port === 8080)!;
    const changed = entries.find((e) => e.key.family === "ipv6" && e.key.port === 9000)!;
    {
      // Another process with the map: delete one entry and point another at network 2.
      using tamper = Datapath.open({ pinPath: w.pinPath });
      tamper.store.remove(victim.key);
      tamper.store.put({ key: changed.key, value: { networkId: 2, mark: 0x21000 } });
    }
    assert.equal((await w.probe(POD_IPV4, 8080, "/")).result, "NO_ROUTE");
    await waitFor(() => {
      const now = new Map(readPinnedTargets(w.pinPath).map((e) => [keyId(e.key), e.value]));
      return now.get(keyId(victim.key))?.networkId === 1 &&
        now.get(keyId(changed.key))?.networkId === 1;
    }, { timeout: 10_000, message: "the resync to repair the map" });
    await assertReaches(w, 1, 8080, 9000);
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
    // Root on the node: the socket, 0600 in a 0700 directory, has the agent's whole view.
    assert.equal(Deno.statSync(agent.agentSocket).mode! & 0o777, 0o600);
    const local = await agent.local("/targets");
    assert.equal(local.status, 200);
    const pods = new Set((JSON.parse(local.body) as { pod: string }[]).map((t) => t.pod));
    assert.deepEqual([...pods], ["e2e/a"]);
  },
});
