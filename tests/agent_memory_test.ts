/**
 * A tenant must not run the agent out of memory. Any tenant may bind pods to
 * any node with spec.nodeName, a pod object may be 1.5 MB, and an agent that
 * kept whole objects (the informer's copy and its own) would pass the chart's
 * memory limit with a few dozen of them, then list them again after every
 * restart. This test plays that tenant against the real agent
 * process and the test API server (loopback only): 1000 hostile pods bound to
 * the agent's node, most listed at start and the rest arriving on the watch.
 *
 * Memory is measured as the agent's peak resident set (VmHWM, which the
 * kernel keeps: no sample can miss a peak), against the chart's own limit
 * from values.yaml with a margin for what the cgroup counts beside it.
 * LACE_HOSTILE_PODS sets another count (to show where an agent fails).
 */
import assert from "node:assert/strict";
import { parse } from "yaml";
import { TestApiServer } from "./api_server/mod.ts";
import type { KubeObject } from "./api_server/mod.ts";
import { agentTestOptions, AgentWorld, POD_IPV4, podManifest } from "./helpers/agent_process.ts";
import { type HostileKind, hostilePod } from "./helpers/hostile_pods.ts";
import { waitFor } from "./helpers/wait.ts";

const VALUES = new URL("../deploy/helm/lace/values.yaml", import.meta.url);
const MiB = 1024 * 1024;

/** The chart's memory limit for the agent, in bytes. */
async function chartMemoryLimit(): Promise<number> {
  const values = parse(await Deno.readTextFile(VALUES)) as {
    resources?: { limits?: { memory?: string } };
  };
  const text = values.resources?.limits?.memory ?? "";
  const m = /^(\d+)(Mi|Gi)$/.exec(text);
  if (!m) throw new Error(`values.yaml resources.limits.memory is "${text}": expected Mi or Gi`);
  return Number(m[1]) * (m[2] === "Gi" ? 1024 : 1) * MiB;
}

/** A value of /proc/PID/status in bytes (VmHWM: peak resident set; VmRSS: now). */
async function procStatus(pid: number, field: "VmHWM" | "VmRSS"): Promise<number> {
  const status = await Deno.readTextFile(`/proc/${pid}/status`);
  const m = new RegExp(`^${field}:\\s+(\\d+) kB$`, "m").exec(status);
  if (!m) throw new Error(`/proc/${pid}/status has no ${field}`);
  return Number(m[1]) * 1024;
}

/** One in 20 makes Lace's own fields big (refused), one in four is at the cap, the rest bulk. */
function kindOf(i: number): HostileKind {
  return i % 20 === 0 ? "probes" : i % 4 === 1 ? "at-cap" : "bulk";
}

Deno.test({
  name: "1000 hostile pods bound to the node keep the agent under the chart's memory limit",
  ...agentTestOptions,
  async fn() {
    const limit = await chartMemoryLimit();
    // What the cgroup counts beside the resident set (page cache, kernel memory) gets 15%.
    const bound = Math.floor(limit * 0.85);
    const count = Number(Deno.env.get("LACE_HOSTILE_PODS") ?? "1000");
    const listed = Math.floor(count * 0.9);
    const node = "e2e-node";
    await using w = await AgentWorld.create();
    await using api = await TestApiServer.start({ namespaces: ["default", "e2e", "tenant"] });
    for (let i = 0; i < listed; i++) api.put(hostilePod(i, kindOf(i), node) as KubeObject);
    const agent = w.startAgent([`--kubeconfig=${await api.writeKubeconfig()}`]);
    // Never let an agent that keeps whole objects take the shared machine with it.
    let killedAt = 0;
    const guard = setInterval(async () => {
      const rss = await procStatus(agent.pid, "VmRSS").catch(() => 0);
      if (rss > 4 * limit && !killedAt) {
        killedAt = rss;
        await agent.stop("SIGKILL");
      }
    }, 200);
    try {
      await agent.ready(300_000).catch((e) => {
        throw new Error(
          `${killedAt ? `killed at ${Math.round(killedAt / MiB)} MiB of RSS; ` : ""}${e.message}`,
        );
      });
      for (let i = listed; i < count; i++) api.put(hostilePod(i, kindOf(i), node) as KubeObject);
      // A tenant's ordinary pod after them all: the agent still works.
      api.put(
        podManifest({ name: "a", networkId: 1, httpPort: 8080, tcpPort: 9000 }) as KubeObject,
      );
      let refused = 0;
      for (let i = 0; i < count; i++) if (kindOf(i) === "probes") refused++;
      const sample = 'lace_probes_ignored{reason="too-large"}';
      await waitFor(async () => (await agent.metric(sample)) === refused, {
        timeout: 120_000,
        message: `${sample} to reach ${refused}`,
      });
      await waitFor(async () => (await w.probe(POD_IPV4, 8080, "/")).body === w.podIn(1), {
        timeout: 30_000,
        message: "the ordinary pod's target to work",
      });
      const events = api.store.list(api.typeOf({ apiVersion: "v1", kind: "Event" }), {}).items
        .filter((e) => (e as { reason?: string }).reason === "ProbeIgnored");
      assert.ok(
        events.some((e) => /over the cap/.test((e as { message?: string }).message ?? "")),
        "a refused pod gets a ProbeIgnored Event saying why",
      );
      const peak = await procStatus(agent.pid, "VmHWM");
      console.log(
        `${count} hostile pods: agent peak RSS ${(peak / MiB).toFixed(1)} MiB ` +
          `(bound ${(bound / MiB).toFixed(1)} MiB, chart limit ${limit / MiB} MiB)`,
      );
      assert.ok(
        peak <= bound,
        `the agent's peak RSS ${(peak / MiB).toFixed(1)} MiB is over ${
          (bound / MiB).toFixed(1)
        } MiB (85% of the chart's ${limit / MiB} MiB limit)`,
      );
    } finally {
      clearInterval(guard);
    }
  },
});
