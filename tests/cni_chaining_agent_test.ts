/**
 * The real agent process with CNI chaining on, under the chart's capabilities, started on a
 * configuration directory it cannot chain: a list nested 9,000 levels deep (libcni loads it)
 * and a file another user owns. Chaining never stops the agent: it starts, reconciles, serves
 * its CNI socket, and reports each file (log, metric, `/chaining` for lace doctor).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { callAgent } from "../lib/cni/client.ts";
import { PROTOCOL_VERSION } from "../lib/cni/protocol.ts";
import { CALICO, deeplyNested } from "../lib/cni/chaining/_fixtures.ts";
import { pluginDir } from "../lib/cni/chaining/_world.ts";
import type { ChainingView } from "../lib/agent_api/views.ts";
import { agentTestOptions, AgentWorld, POD_A, POD_IPV4 } from "./helpers/agent_process.ts";
import { explainFailure, waitFor } from "./helpers/wait.ts";

/** The chart's capabilities (deploy/helm/lace/values.yaml): no CHOWN, FOWNER or DAC_OVERRIDE. */
const CHART_CAPABILITIES = ["-all", "+bpf", "+net_admin", "+perfmon", "+sys_admin"].join(",");

Deno.test({
  ...agentTestOptions,
  name: "the agent starts, reconciles and serves its CNI socket with a conf dir it cannot chain " +
    "(a list nested 9,000 deep, a file another user owns), and reports both",
  async fn() {
    await using w = await AgentWorld.create();
    const root = await Deno.makeTempDir({ prefix: "lace-chain-agent-" });
    try {
      const confDir = join(root, "net.d");
      await Deno.mkdir(confDir);
      const deep = join(confDir, "10-deep.conflist");
      const theirs = join(confDir, "20-theirs.conflist");
      await Deno.writeTextFile(deep, deeplyNested());
      await Deno.writeTextFile(theirs, CALICO);
      await Deno.chown(theirs, 1000, 1000);
      await w.writePod(POD_A);
      const socket = join(w.runDir, "cni.sock");
      const agent = w.startAgent(
        [
          "--no-kube-api",
          `--pods-dir=${w.podsDir}`,
          `--cni-socket=${socket}`,
          `--cni-conf-dir=${confDir}`,
          `--cni-state-dir=${join(root, "state")}`,
          `--cni-bin-dir=${pluginDir(root)}`,
          "--cni-chain-files=10-deep.conflist,20-theirs.conflist",
        ],
        w.cgroups.kubelet,
        {
          wrap: ["setpriv", `--bounding-set=${CHART_CAPABILITIES}`, "--inh-caps=-all", "--"],
        },
      );
      await agent.ready();
      // Every file reported on /chaining, for lace doctor: the passes ran, the agent lives on.
      const view = await explainFailure(
        waitFor(async () => {
          const v = JSON.parse((await agent.local("/chaining")).body) as ChainingView;
          return v.problems.length === 2 && v;
        }, { message: "both files reported on /chaining" }),
        () => Promise.resolve(`agent log:\n${agent.logs.join("\n")}`),
      );
      // Reconciles: pod a's targets are in the map.
      const targets = JSON.parse((await agent.local("/targets")).body) as { address: string }[];
      assert.ok(targets.some((t) => t.address === POD_IPV4), JSON.stringify(targets));
      // Serves its CNI socket.
      const reply = await callAgent(socket, {
        v: PROTOCOL_VERSION,
        id: "1",
        op: "del",
        ref: { containerId: "absent", ifname: "eth0" },
      }, 2000);
      assert.equal(reply.ok, true, JSON.stringify(reply));
      const byFile = Object.fromEntries(view.problems.map((p) => [p.file, p]));
      assert.equal(byFile["10-deep.conflist"].reason, "refused");
      assert.match(byFile["10-deep.conflist"].message, /nests more than 64 levels deep/);
      // Another user's file is never written as root (it would fail on the chown here).
      assert.equal(byFile["20-theirs.conflist"].reason, "unsafe");
      assert.match(byFile["20-theirs.conflist"].message, /"20-theirs\.conflist": it is owned by/);
      const refusals = await agent.metric('lace_cni_chaining_total{outcome="refused"}');
      assert.ok((refusals ?? 0) >= 1, `lace_cni_chaining_total refused: ${refusals}`);
      assert.ok(agent.logs.some((l) => l.includes("10-deep.conflist") && l.includes("64 levels")));
      assert.equal(await Deno.readTextFile(deep), deeplyNested());
      assert.equal(await Deno.readTextFile(theirs), CALICO);
      const st = await Deno.stat(theirs);
      assert.deepStrictEqual([st.uid, st.gid], [1000, 1000]);
    } finally {
      await Deno.remove(root, { recursive: true });
    }
  },
});
