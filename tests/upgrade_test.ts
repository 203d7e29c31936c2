/**
 * Upgrades on the real kernel: agents of different releases (other BPF
 * objects, chosen with LACE_BPF_OBJECT) take over one node's pins in turn,
 * while a stand-in kubelet connects every few milliseconds from the kubelet
 * cgroup. Every connect must stay tagged: the goal is zero untagged connects.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { defaultConfig, markFor } from "../lib/config.ts";
import { objectSha256 } from "../lib/datapath/bpf_object.ts";
import { BpfMap } from "../lib/datapath/libbpf/map.ts";
import { readCounterSlot, readPinnedInfo } from "../lib/datapath/pins.ts";
import { COUNTER_SLOTS } from "../lib/datapath/probe_map.ts";
import { type AgentProcess, AgentWorld, POD_IPV4, podManifest } from "./helpers/agent_process.ts";
import { buildBpfObject } from "./helpers/bpf_build.ts";
import { privilegedSkipReason } from "./helpers/sim_world.ts";
import { StandInKubelet } from "./helpers/stand_in_kubelet.ts";
import { waitFor } from "./helpers/wait.ts";

const skip = privilegedSkipReason();
const opts = { ignore: skip !== undefined, sanitizeResources: false, sanitizeOps: false };
const POD = podManifest({ name: "a", networkId: 1, httpPort: 8080, tcpPort: 9000 });
const TARGET = { host: POD_IPV4, port: 9000, mark: markFor(defaultConfig(), 1) };

/** Starts an agent running `object` (default: today's) on w's pods; waits until ready. */
async function startAgent(w: AgentWorld, object?: string): Promise<AgentProcess> {
  const agent = w.startAgent(
    ["--no-kube-api", `--pods-dir=${w.podsDir}`],
    w.cgroups.kubelet,
    object ? { LACE_BPF_OBJECT: object } : {},
  );
  await agent.ready();
  return agent;
}

/** Connects counted in the last counter slot, which only the test variant counts. */
function variantCount(pinPath: string): bigint {
  using counters = BpfMap.openPinned(join(pinPath, "counters"));
  return readCounterSlot(counters, COUNTER_SLOTS - 1);
}

Deno.test({
  name:
    "an agent with new instructions on the same maps swaps its program in, with no untagged connect",
  ...opts,
  async fn() {
    await using w = await AgentWorld.create();
    const dir = await Deno.makeTempDir({ prefix: "lace-upgrade-" });
    try {
      const variant = await buildBpfObject({
        out: join(dir, "variant.bpf.o"),
        defines: ["LACE_TEST_VARIANT"],
      });
      await w.writePod(POD);
      const first = await startAgent(w);
      await using kubelet = new StandInKubelet(w.kubelet, TARGET);
      await kubelet.connects(20);

      // The rolling update: the old agent stops (its pins stay), the new release starts.
      assert.equal((await first.stop()).code, 0);
      const next = await startAgent(w, variant);
      const sha = objectSha256(await Deno.readFile(variant));
      await waitFor(() => readPinnedInfo(w.pinPath)?.objectSha256 === sha, {
        message: "the new object recorded in the info map",
      });
      assert.equal(await next.metric('lace_program_replacements_total{program="connect4"}'), 1);
      assert.equal(await next.metric('lace_program_replacements_total{program="connect6"}'), 1);
      const before = variantCount(w.pinPath);
      await kubelet.connects(20);
      assert.ok(variantCount(w.pinPath) >= before + 20n, "the new instructions run");

      // And back: the previous object replaces the variant the same way.
      assert.equal((await next.stop()).code, 0);
      const back = await startAgent(w);
      assert.equal(await back.metric('lace_program_replacements_total{program="connect4"}'), 1);
      const after = variantCount(w.pinPath);
      await kubelet.connects(20);
      assert.equal(variantCount(w.pinPath), after, "the variant no longer runs");

      const tally = await kubelet.stop();
      assert.equal(tally.untagged, 0, `untagged connects: ${tally.samples.join(", ")}`);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
