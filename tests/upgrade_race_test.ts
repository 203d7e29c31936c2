/**
 * Two agents racing for one node's pins on the real kernel, of the same or of different map
 * layouts, while a stand-in kubelet connects every few milliseconds: the links end with the
 * right agent and no connect goes untagged.
 */
import assert from "node:assert/strict";
import { readPinnedInfo } from "../lib/datapath/pins.ts";
import { type AgentProcess, agentTestOptions, AgentWorld } from "./helpers/agent_process.ts";
import { Releases, sha256Of } from "./helpers/releases.ts";
import { StandInKubelet } from "./helpers/stand_in_kubelet.ts";
import { waitFor } from "./helpers/wait.ts";
import {
  assertLastConnectsTagged,
  converged,
  nodeRunning,
  onlyLayout,
  pins,
  startAgent,
  startReadyAgent,
  stopCleanly,
  TARGETS,
  TODAY,
} from "./helpers/upgrade_node.ts";

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
    const standing = await earlier.get("/readyz");
    assert.equal(standing.status, 503);
    assert.match(
      standing.body,
      /^not ready: .*This agent stands by: an agent of the same map layout .* that started later/m,
    );

    await stopCleanly(later);
    await earlier.ready();
    await converged(w, TODAY, 2);
    await assertLastConnectsTagged(kubelet);
  },
});
