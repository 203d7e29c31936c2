/**
 * The agent's life on the simulated node, as a real process: a start before the kubelet's cgroup
 * exists, kill -9 and restart with no gap, SIGTERM leaving the datapath pinned, `lace uninstall`,
 * and the periodic resync repairing the map behind its back.
 */
import assert from "node:assert/strict";
import { readPinnedTargets } from "../lib/datapath/pins.ts";
import { keyId } from "../lib/probe/key.ts";
import { agentTestOptions, AgentWorld, POD_A, POD_IPV4 } from "./helpers/agent_process.ts";
import { assertReaches, laceTargets, POD_B, startReadyAgent } from "./helpers/agent_checks.ts";
import { waitFor } from "./helpers/wait.ts";

Deno.test({
  name:
    "after kill -9 probes keep working, and a restarted agent removes stale entries with no gap",
  ...agentTestOptions,
  async fn() {
    await using w = await AgentWorld.create();
    const first = await startReadyAgent(w, [POD_A, POD_B]);
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
      const { Prober } = await import("../lib/prober/mod.ts");
      await using prober = await Prober.start({ netns: w.node.netns, cgroup: late });
      const res = await prober.probe({ host: POD_IPV4, port: 8080, timeoutMs: 1000, http: "/" });
      assert.equal(res.result, "reached");
    } finally {
      await agent.stop("SIGKILL");
      await Deno.remove(late).catch(() => {});
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
    const { BpfObject } = await import("../lib/libbpf/mod.ts");
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
    const { defaultConfig } = await import("../lib/config.ts");
    const { markFor } = await import("../lib/probe/key.ts");
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
