/**
 * Upgrades on the real kernel: agents of different releases (other BPF
 * objects, chosen with LACE_BPF_OBJECT) take over one node's pins in turn,
 * while a stand-in kubelet connects every few milliseconds from the kubelet
 * cgroup. Every connect must stay tagged: the goal is zero untagged connects.
 */
import assert from "node:assert/strict";
import { defaultConfig, markFor } from "../lib/config.ts";
import { Datapath } from "../lib/datapath/loader.ts";
import { isPresenceDir } from "../lib/datapath/layout.ts";
import { BpfObject } from "../lib/datapath/libbpf/object.ts";
import {
  MAP_NAMES,
  openCurrentMap,
  readCounterSlot,
  readPinnedInfo,
  readPinnedTargets,
  readPinnedTargetsWithHits,
} from "../lib/datapath/pins.ts";
import { ABI_VERSION, COUNTER_SLOTS, keyId, type ProbeEntry } from "../lib/datapath/probe_map.ts";
import {
  type AgentProcess,
  agentTestOptions,
  AgentWorld,
  POD_A,
  POD_IPV4,
  POD_IPV6,
} from "./helpers/agent_process.ts";
import { installUnversionedRelease, Releases, sha256Of } from "./helpers/releases.ts";
import { type KubeletTally, StandInKubelet } from "./helpers/stand_in_kubelet.ts";
import { waitFor } from "./helpers/wait.ts";

const MARK = markFor(defaultConfig(), 1);
const TARGET = { host: POD_IPV4, port: 9000, mark: MARK };
/** What the stand-in kubelet connects to: TARGET, and the same pod and port over IPv6. */
const TARGETS = [TARGET, { ...TARGET, host: POD_IPV6 }];
/** What the map holds for POD_A, whatever the release. */
const EXPECTED: ProbeEntry[] = [POD_IPV4, POD_IPV6].flatMap((address) =>
  [8080, 9000].map((port) => ({
    key: { family: address === POD_IPV4 ? "ipv4" as const : "ipv6" as const, address, port },
    value: { networkId: 1, mark: MARK },
  }))
);

/** Starts an agent running `object` (default: today's) on w's pods. */
function startAgent(w: AgentWorld, object?: string, env: Record<string, string> = {}) {
  return w.startAgent(
    ["--no-kube-api", `--pods-dir=${w.podsDir}`],
    w.cgroups.kubelet,
    { env: object ? { LACE_BPF_OBJECT: object, ...env } : env },
  );
}

/** Starts an agent and waits until it is ready (attached, its program in the links). */
async function startReadyAgent(w: AgentWorld, object?: string): Promise<AgentProcess> {
  const agent = startAgent(w, object);
  await agent.ready();
  return agent;
}

/** Connects counted in the last counter slot, which only the test variant counts. */
function variantCount(pinPath: string): bigint {
  using counters = openCurrentMap(pinPath, "counters");
  return readCounterSlot(counters, COUNTER_SLOTS - 1);
}

/** The names under the pin path, and under each layout directory; not running agents' presence. */
function pins(pinPath: string): string[] {
  const out: string[] = [];
  for (const e of Deno.readDirSync(pinPath)) {
    if (isPresenceDir(e.name)) continue;
    out.push(e.name);
    if (e.isDirectory) {
      for (const m of Deno.readDirSync(`${pinPath}/${e.name}`)) out.push(`${e.name}/${m.name}`);
    }
  }
  return out.sort();
}

/** Exactly one layout's maps and the two links. */
function onlyLayout(abi: number): string[] {
  return [
    `abi${abi}`,
    `abi${abi}/counters`,
    `abi${abi}/info`,
    `abi${abi}/probe_targets`,
    "link_connect4",
    "link_connect6",
  ];
}

function sorted(entries: ProbeEntry[]): string[] {
  return entries.map((e) => `${keyId(e.key)} ${e.value.networkId} ${e.value.mark}`).sort();
}

/** Waits until the node runs `object` on layout `abi` alone, with POD_A's targets. */
async function converged(w: AgentWorld, object: string, abi: number): Promise<void> {
  const sha = await sha256Of(object);
  await waitFor(() => readPinnedInfo(w.pinPath)?.objectSha256 === sha, {
    message: `the links to run ${object}`,
  });
  assert.equal(readPinnedInfo(w.pinPath)?.abiVersion, abi);
  await waitFor(() => pins(w.pinPath).join() === onlyLayout(abi).join(), {
    message: `only layout ${abi} pinned (have ${pins(w.pinPath).join(", ")})`,
  });
  assert.deepEqual(sorted(readPinnedTargets(w.pinPath)), sorted(EXPECTED));
}

function assertNoneUntagged(tally: KubeletTally) {
  assert.equal(tally.untagged, 0, `untagged connects: ${tally.samples.join(", ")}`);
  for (const { host } of TARGETS) {
    const n = tally.perHost[host] ?? 0;
    assert.ok(n > 25, `only ${n} connects to ${host}`);
  }
}

/** The end of every upgrade: 20 more connects, then none of the kubelet's went untagged. */
async function assertLastConnectsTagged(kubelet: StandInKubelet): Promise<void> {
  await kubelet.connects(20);
  assertNoneUntagged(await kubelet.stop());
}

/** Stops `agent` as a rolling update does and asserts that it exited cleanly. */
async function stopCleanly(agent: AgentProcess): Promise<void> {
  assert.equal((await agent.stop()).code, 0);
}

/** The node before the change under test: POD_A written, an agent running `object` on it. */
async function nodeRunning(w: AgentWorld, object?: string): Promise<AgentProcess> {
  await w.writePod(POD_A);
  return await startReadyAgent(w, object);
}

Deno.test({
  name:
    "an agent with new instructions on the same maps swaps its program in, with no untagged connect",
  ...agentTestOptions,
  async fn() {
    await using w = await AgentWorld.create();
    await using releases = await Releases.create();
    const variant = await releases.variant();
    const first = await nodeRunning(w);
    await using kubelet = new StandInKubelet(w.kubelet, TARGETS);
    await kubelet.connects(20);

    // The rolling update: the old agent stops (its pins stay), the new release starts.
    await stopCleanly(first);
    const next = await startReadyAgent(w, variant);
    await converged(w, variant, ABI_VERSION);
    assert.equal(await next.metric('lace_program_replacements_total{program="connect4"}'), 1);
    assert.equal(await next.metric('lace_program_replacements_total{program="connect6"}'), 1);
    const before = variantCount(w.pinPath);
    await waitFor(() => variantCount(w.pinPath) >= before + 20n, {
      message: "the new instructions to count the kubelet's connects",
    });

    // And back: the previous object replaces the variant the same way.
    await stopCleanly(next);
    const back = await startReadyAgent(w);
    assert.equal(await back.metric('lace_program_replacements_total{program="connect4"}'), 1);
    const after = variantCount(w.pinPath);
    await kubelet.connects(20);
    assert.equal(variantCount(w.pinPath), after, "the variant no longer runs");
    assertNoneUntagged(await kubelet.stop());
  },
});

const TODAY = new URL("../bpf/lace.bpf.o", import.meta.url).pathname;

/** The hits the map holds for TARGET now (0n when its layout has none). */
function targetHits(pinPath: string): bigint {
  const e = readPinnedTargetsWithHits(pinPath).find((e) =>
    e.key.address === TARGET.host && e.key.port === TARGET.port
  );
  return e?.hits.hits ?? 0n;
}

Deno.test({
  name: "the previous release's layout (ABI 1) migrates up to today's (hits) and back down, " +
    "with no untagged connect",
  ...agentTestOptions,
  async fn() {
    await using w = await AgentWorld.create();
    await using releases = await Releases.create();
    const previous = await releases.previous();
    // A node the previous release runs; the kubelet connects from here on.
    const first = await nodeRunning(w, previous);
    await converged(w, previous, 1);
    await using kubelet = new StandInKubelet(w.kubelet, TARGETS);
    await stopCleanly(first);
    for (const [object, abi] of [[TODAY, 2], [previous, 1], [TODAY, 2]] as const) {
      const agent = await startReadyAgent(w, object);
      await converged(w, object, abi);
      const before = targetHits(w.pinPath);
      await kubelet.connects(20);
      // Waited for, not read once: a connect in flight when `before` was read counts on either side.
      if (abi === 2) {
        await waitFor(() => targetHits(w.pinPath) >= before + 20n, {
          message: "today's layout to count hits",
        });
      }
      await stopCleanly(agent);
    }
    assertNoneUntagged(await kubelet.stop());
  },
});

Deno.test({
  name: "layout changes migrate up from the release before layouts were versioned to the next " +
    "layout and back, hits carried over, with no untagged connect",
  ...agentTestOptions,
  async fn() {
    await using w = await AgentWorld.create();
    await using releases = await Releases.create();
    const unversioned = await releases.unversioned();
    const next = await releases.nextLayout();
    // A node as the release before left it: maps pinned flat, its program in the links.
    await installUnversionedRelease(w.pinPath, w.cgroups.kubelet, unversioned, EXPECTED);
    await w.writePod(POD_A);
    await using kubelet = new StandInKubelet(w.kubelet, TARGETS);
    await kubelet.connects(20);

    let hits = 0n;
    for (const [object, abi] of [[TODAY, 2], [next, 3], [TODAY, 2]] as const) {
      const agent = await startReadyAgent(w, object);
      await converged(w, object, abi);
      assert.ok(targetHits(w.pinPath) >= hits, `hits kept on the way to ABI ${abi}`);
      assert.match((await agent.get("/metrics")).body, new RegExp(`bpf_abi="${abi}"`));
      await kubelet.connects(20);
      hits = await waitFor(() => targetHits(w.pinPath) >= 20n && targetHits(w.pinPath), {
        message: `ABI ${abi} to count hits`,
      });
      await stopCleanly(agent);
    }
    assertNoneUntagged(await kubelet.stop());
  },
});

for (
  const [step, from, to] of [
    ["filled", 1, 2],
    ["swapped-one", 2, 1],
    ["swapped", 1, 2],
  ] as const
) {
  Deno.test({
    name: `an agent killed at migration step "${step}" (ABI ${from} to ${to}) ` +
      "converges on restart: nothing lost, old pins gone, no untagged connect",
    ...agentTestOptions,
    async fn() {
      await using w = await AgentWorld.create();
      await using releases = await Releases.create();
      const objects: Record<number, string> = { 1: await releases.previous(), 2: TODAY };
      const old = await nodeRunning(w, objects[from]);
      await using kubelet = new StandInKubelet(w.kubelet, TARGETS);
      await stopCleanly(old);

      const killed = startAgent(w, objects[to], { LACE_TEST_PAUSE_AT: step });
      await waitFor(() => killed.logs.some((l) => l.includes("Paused at migration step")), {
        timeout: 20_000,
        message: `the agent to pause at ${step}`,
      });
      await kubelet.connects(20);
      await killed.stop("SIGKILL");
      await kubelet.connects(20);

      await startReadyAgent(w, objects[to]);
      await converged(w, objects[to], to);
      await assertLastConnectsTagged(kubelet);
    },
  });
}

for (const first of ["older", "newer"] as const) {
  Deno.test({
    name: `two agents of different layouts, the ${first} in the links first, leave the newer ` +
      "layout alone, the older standing by loudly until the newer stops",
    ...agentTestOptions,
    async fn() {
      await using w = await AgentWorld.create();
      await using releases = await Releases.create();
      const previous = await releases.previous();
      const node = await nodeRunning(w);
      await using kubelet = new StandInKubelet(w.kubelet, TARGETS);
      await stopCleanly(node);

      // The race's two outcomes, each forced: one agent has its program in the links before
      // the other starts.
      const start = { older: () => startAgent(w, previous), newer: () => startAgent(w, TODAY) };
      const agents = {} as Record<"older" | "newer", AgentProcess>;
      agents[first] = start[first]();
      await agents[first].ready();
      await converged(w, first === "older" ? previous : TODAY, first === "older" ? 1 : 2);
      const second = first === "older" ? "newer" : "older";
      agents[second] = start[second]();
      const { older, newer } = agents;
      await newer.ready();
      await converged(w, TODAY, 2);
      await waitFor(async () => {
        const r = await older.get("/readyz");
        return r.status === 503 && r.body.includes("stands by");
      }, { timeout: 20_000, message: "the older agent to report that it stands by" }).catch((e) => {
        throw new Error(`${e.message}\nolder agent log:\n${older.logs.join("\n")}`);
      });
      assert.ok(older.logs.some((l) => l.includes("Standing by")), "the older agent says so");
      assert.equal(await older.metric("lace_standing_by"), 1);
      await kubelet.connects(50);
      assert.equal(pins(w.pinPath).join(), onlyLayout(2).join(), "still one set of pins");

      // The newer agent goes (a rollback): the older one takes over with its own layout.
      await stopCleanly(newer);
      await older.ready();
      assert.equal(await older.metric("lace_standing_by"), 0);
      await converged(w, previous, 1);
      await assertLastConnectsTagged(kubelet);
    },
  });
}

Deno.test({
  name: "two agents of the same layout leave the links to the one that started last, " +
    "with no swapping back and forth",
  ...agentTestOptions,
  async fn() {
    await using w = await AgentWorld.create();
    await using releases = await Releases.create();
    const variant = await releases.variant();
    const earlier = await nodeRunning(w);
    await using kubelet = new StandInKubelet(w.kubelet, TARGETS);
    const later = await startReadyAgent(w, variant);
    await converged(w, variant, 2);
    await waitFor(async () => (await earlier.metric("lace_standing_by")) === 1, {
      message: "the earlier agent to stand by",
    });
    await kubelet.connects(50);
    // Still the later agent's program, swapped in once: nobody swapped back.
    assert.equal(readPinnedInfo(w.pinPath)?.objectSha256, await sha256Of(variant));
    assert.equal(await later.metric('lace_program_replacements_total{program="connect4"}'), 1);
    // A counter with no increment has no labelled sample.
    assert.equal(
      (await earlier.metric('lace_program_replacements_total{program="connect4"}')) ?? 0,
      0,
    );
    assert.equal((await earlier.get("/readyz")).status, 503);

    await stopCleanly(later);
    await earlier.ready();
    await converged(w, TODAY, 2);
    await assertLastConnectsTagged(kubelet);
  },
});

Deno.test({
  name: "over a layout it cannot read, an agent swaps only once its first full pod list " +
    "is in its own map, with no untagged connect",
  ...agentTestOptions,
  async fn() {
    await using w = await AgentWorld.create();
    await using releases = await Releases.create();
    const narrow = await releases.narrowValue();
    await installUnversionedRelease(w.pinPath, w.cgroups.kubelet, narrow, EXPECTED);
    await using kubelet = new StandInKubelet(w.kubelet, TARGETS);
    await kubelet.connects(20);

    // The agent cannot copy the old map: it swaps once its own list of POD_A is in its map.
    await w.writePod(POD_A);
    const agent = startAgent(w, TODAY);
    await agent.ready();
    const line = (text: string) => agent.logs.findIndex((l) => l.includes(text));
    assert.ok(line("cannot read") >= 0, "it says why it waits before swapping");
    assert.ok(
      line("First full pod list applied") < line("not this agent's: swapped in"),
      "the swap comes after its own list is in its map",
    );
    await converged(w, TODAY, ABI_VERSION);
    await assertLastConnectsTagged(kubelet);
  },
});

Deno.test({
  name: "maps pinned under this layout's directory with another layout are refused, never used",
  ...agentTestOptions,
  async fn() {
    await using w = await AgentWorld.create();
    await using releases = await Releases.create();
    // A build that changed the probe value but not LACE_ABI_VERSION: its maps claim abi2/.
    const wrong = await releases.nextLayout();
    await Deno.mkdir(`${w.pinPath}/abi2`, { recursive: true });
    {
      using obj = BpfObject.openMemory(await Deno.readFile(wrong));
      for (const name of MAP_NAMES) obj.setPinPath(name, `${w.pinPath}/abi2/${name}`);
      obj.load();
    }
    const before = pins(w.pinPath);
    assert.throws(
      () => Datapath.open({ pinPath: w.pinPath, object: Deno.readFileSync(TODAY) }),
      /Refusing the maps pinned under map layout ABI 2: pinned map "probe_targets" has valueSize 32, this object's has valueSize 24/,
    );
    assert.deepEqual(pins(w.pinPath), before, "nothing pinned, nothing removed");
  },
});
