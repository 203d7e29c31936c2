/**
 * Upgrades on the real kernel: agents of different releases (other BPF
 * objects, chosen with LACE_BPF_OBJECT) take over one node's pins in turn,
 * while a stand-in kubelet connects every few milliseconds from the kubelet
 * cgroup. Every connect must stay tagged: the goal is zero untagged connects.
 */
import assert from "node:assert/strict";
import { Datapath } from "../lib/datapath/loader.ts";
import { BpfObject } from "../lib/libbpf/mod.ts";
import { MAP_NAMES } from "../lib/datapath/pins.ts";
import { ABI_VERSION } from "../lib/datapath/probe_map.ts";
import { agentTestOptions, AgentWorld, POD_A } from "./helpers/agent_process.ts";
import { installUnversionedRelease, Releases } from "./helpers/releases.ts";
import { StandInKubelet } from "./helpers/stand_in_kubelet.ts";
import { waitFor } from "./helpers/wait.ts";
import {
  assertLastConnectsTagged,
  assertNoneUntagged,
  converged,
  EXPECTED,
  nodeRunning,
  pins,
  startAgent,
  startReadyAgent,
  stopCleanly,
  targetHits,
  TARGETS,
  TODAY,
  variantCount,
} from "./helpers/upgrade_node.ts";

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
