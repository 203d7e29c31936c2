/**
 * Figure 2, time to reachable: from a pod appearing in a source until all of
 * its targets are in the pinned map, read straight from the kernel map (not
 * from the agent's own view). Two sources, each with its own agent process:
 * a manifest file written into the pods directory, and a watch event from the
 * test API server. Pods are added one by one (each waited for), then a burst
 * added all at once.
 */
import { join } from "node:path";
import { openCurrentMap, uninstall } from "../lib/datapath/pins.ts";
import { BpfProbeStore } from "../lib/datapath/probe_store.ts";
import type { ProbeKey } from "../lib/probe/key.ts";
import { SimCgroups } from "../lib/demo/cgroup.ts";
import { AgentProcess } from "./agent_process.ts";
import { startApiServerProcess } from "./json_child.ts";
import { benchPod, benchPodKeys, benchPodsDir } from "./pods.ts";
import { atMost, type FigureResult, fmt, type Goal, type Row } from "./report.ts";
import { max, median, percentile, round } from "./stats.ts";
import { benchPinPath, pollUntil } from "./system.ts";
import type { CleanupStack } from "../lib/os/cleanup_stack.ts";

export interface TimeToReachableOptions {
  quick: boolean;
}

/** How pods reach one agent: add pods, and the agent's extra command-line. */
interface Source {
  name: string;
  label: string;
  add(indices: number[]): Promise<void>;
}

async function dirSource(cleanups: CleanupStack): Promise<{ source: Source; podsDir: string }> {
  const podsDir = await benchPodsDir(cleanups);
  return {
    podsDir,
    source: {
      name: "dir",
      label: "file in the pods directory",
      add(indices) {
        for (const i of indices) {
          // Written beside under a dot name (ignored by the source), then renamed: never half seen.
          const tmp = join(podsDir, `.pod-${i}.json`);
          Deno.writeTextFileSync(tmp, JSON.stringify(benchPod(i)));
          Deno.renameSync(tmp, join(podsDir, `pod-${i}.json`));
        }
        return Promise.resolve();
      },
    },
  };
}

async function apiSource(cleanups: CleanupStack): Promise<{ source: Source; kubeconfig: string }> {
  const server = await startApiServerProcess(cleanups);
  return {
    kubeconfig: String(server.ready.kubeconfig),
    source: {
      name: "api",
      label: "API watch event",
      async add(indices) {
        await server.request({ put: indices.map((i) => benchPod(i)) });
      },
    },
  };
}

export async function timeToReachable(
  opts: TimeToReachableOptions,
  cleanups: CleanupStack,
): Promise<FigureResult> {
  const n = opts.quick ? 20 : 250;
  const cgroups = SimCgroups.create();
  cleanups.push(() => cgroups.dispose());
  const rows: Row[] = [];
  const goals: Goal[] = [];
  const data: Record<string, unknown> = { pods: n, targetsPerPod: benchPodKeys(0).length };

  for (const make of [dirSource, apiSource]) {
    const pinPath = benchPinPath();
    cleanups.push(() => uninstall(pinPath));
    const made = await make(cleanups);
    const { source } = made;
    const agent = AgentProcess.start({
      pinPath,
      kubeletCgroup: cgroups.kubelet,
      podsDir: "podsDir" in made ? made.podsDir : undefined,
      kubeconfig: "kubeconfig" in made ? made.kubeconfig : undefined,
    });
    cleanups.push(() => agent.stop());
    await agent.waitReady();
    const map = new BpfProbeStore(openCurrentMap(pinPath, "probe_targets"));
    cleanups.push(() => map.close());
    const present = (keys: ProbeKey[]) => keys.every((k) => map.get(k) !== undefined);

    const oneByOne: number[] = [];
    for (let i = 0; i < n; i++) {
      const keys = benchPodKeys(i);
      const t0 = performance.now();
      await source.add([i]);
      const seen = pollUntil(`pod ${i} in the map (${source.name})`, () => present(keys), 10_000);
      oneByOne.push(seen - t0);
    }
    const burst = Array.from({ length: n }, (_, j) => n + j);
    const burstKeys = burst.flatMap((i) => benchPodKeys(i));
    const t0 = performance.now();
    await source.add(burst);
    const burstMs = pollUntil(`burst of ${n} in the map (${source.name})`, () =>
      present(burstKeys), 30_000) -
      t0;
    await agent.stop();

    const p50 = percentile(oneByOne, 50), p99 = percentile(oneByOne, 99);
    data[source.name] = {
      oneByOne: {
        p50Ms: round(p50, 2),
        p99Ms: round(p99, 2),
        maxMs: round(max(oneByOne), 2),
        medianMs: round(median(oneByOne), 2),
        samplesMs: oneByOne.map((x) => round(x, 2)),
      },
      burst: { pods: n, targets: burstKeys.length, ms: round(burstMs, 2) },
    };
    rows.push(
      {
        measurement: `${source.label}: one by one (${n} pods), p50 / p99 / max`,
        value: `${fmt(p50)} / ${fmt(p99)} / ${fmt(max(oneByOne))} ms`,
        goal: "p99 ≤ 20 ms",
      },
      {
        measurement:
          `${source.label}: burst of ${n} pods (${burstKeys.length} targets) fully applied`,
        value: `${fmt(burstMs)} ms`,
        goal: "≤ 500 ms",
      },
    );
    goals.push(
      atMost(
        "reachable",
        `${source.label}: p99 one by one`,
        round(p99, 2),
        20,
        "ms",
        source.name === "dir"
          ? `p50 is ${fmt(p50)} ms: the directory source reads a file once its write ended ` +
            "(renamed in), and the agent reconciles at once when its last run started 5 ms ago " +
            "or more"
          : `one-by-one p50 is ${
            fmt(p50)
          } ms; the tail is the watch stream and the agent's 5 ms between runs`,
      ),
      atMost(
        "reachable",
        `${source.label}: burst of ${n} fully applied`,
        round(burstMs, 2),
        500,
        "ms",
      ),
    );
  }
  return { name: "reachable", title: "2. Time to reachable", rows, goals, data };
}
