/**
 * Figure 9, pod memory (the tenant of tests/agent_memory_test.ts): the heap the agent's API source
 * and pod cache keep per pod, for pods as real workloads have them (about
 * 3 KB of JSON) beside pods as a hostile tenant makes them (1.5 MB: the API
 * server's largest object), each listed from the test API server by a process
 * of its own (bench/pod_memory_child.ts), with the peak RSS of that process
 * while it listed. The hostile kinds are those of the attacker test
 * (tests/helpers/hostile_pods.ts): `bulk` (250 KB of annotations, 4000 ports
 * and env, which Lace drops), `at-cap` (the most Lace keeps of one pod: its
 * probes' fields just under MAX_POD_BYTES) and `probes` (1.5 MB of probes,
 * refused and kept as a skeleton).
 */
import { fileURLToPath } from "node:url";
import { startApiServerProcess } from "./json_child.ts";
import { atMost, type FigureResult, fmt, type Goal, type Row } from "./report.ts";
import { round } from "./stats.ts";
import { v8FlagsArg } from "../lib/os/v8_flags.ts";
import type { CleanupStack } from "../lib/os/cleanup_stack.ts";
import { type HostileKind, hostilePod, realisticPod } from "../tests/helpers/hostile_pods.ts";

const CHILD = fileURLToPath(new URL("./pod_memory_child.ts", import.meta.url));
const KiB = 1024;
const MiB = 1024 * KiB;

interface Kind {
  name: "realistic" | HostileKind;
  label: string;
  count: number;
  pod: (i: number, node: string) => Record<string, unknown>;
}

interface ChildResult {
  count: number;
  known: number;
  heapPerPodBytes: number;
  listMs: number;
  rssBeforeBytes: number;
  peakRssBytes: number;
}

async function measure(kubeconfig: string, node: string, count: number): Promise<ChildResult> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", v8FlagsArg(), CHILD, kubeconfig, node, String(count)],
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
  }).output();
  if (!out.success) throw new Error(`${CHILD} failed for ${node} (exit ${out.code})`);
  return JSON.parse(new TextDecoder().decode(out.stdout).trim().split("\n").at(-1)!);
}

export async function podMemory(
  opts: { quick: boolean },
  cleanups: CleanupStack,
): Promise<FigureResult> {
  const n = (full: number, quick: number) => (opts.quick ? quick : full);
  const kinds: Kind[] = [
    { name: "realistic", label: "realistic (3 KB)", count: n(1000, 100), pod: realisticPod },
    {
      name: "bulk",
      label: "hostile bulk (1.5 MB)",
      count: n(200, 20),
      pod: (i, node) => hostilePod(i, "bulk", node),
    },
    {
      name: "at-cap",
      label: "hostile at the cap (17 KB)",
      count: n(200, 20),
      pod: (i, node) => hostilePod(i, "at-cap", node),
    },
    {
      name: "probes",
      label: "hostile probes (1.5 MB, refused)",
      count: n(50, 10),
      pod: (i, node) => hostilePod(i, "probes", node),
    },
  ];
  const api = await startApiServerProcess(cleanups);
  const kubeconfig = String(api.ready.kubeconfig);
  const results: (Kind & { jsonBytes: number; result: ChildResult })[] = [];
  for (const kind of kinds) {
    const node = `bench-${kind.name}`;
    // In batches, so that no request line holds more than about 30 MB.
    for (let i = 0; i < kind.count;) {
      const batch: unknown[] = [];
      let bytes = 0;
      while (i < kind.count && bytes < 30_000_000) {
        const pod = kind.pod(i++, node);
        bytes += JSON.stringify(pod).length;
        batch.push(pod);
      }
      await api.request({ put: batch });
    }
    const result = await measure(kubeconfig, node, kind.count);
    if (result.known !== kind.count) {
      throw new Error(
        `${kind.label}: the cache knows ${result.known} pods, expected ${kind.count}`,
      );
    }
    results.push({ ...kind, jsonBytes: JSON.stringify(kind.pod(0, node)).length, result });
  }
  const rows: Row[] = results.flatMap((r) => [
    {
      measurement: `heap per pod, ${r.label}, ${r.count} pods`,
      value: `${fmt(round(r.result.heapPerPodBytes / KiB, 2))} KiB`,
    },
    {
      measurement: `peak RSS of that process (before the measured list: ${
        fmt(round(r.result.rssBeforeBytes / MiB, 1))
      } MiB)`,
      value: `${fmt(round(r.result.peakRssBytes / MiB, 1))} MiB`,
    },
  ]);
  const hostileHeap = Math.max(
    ...results.filter((r) => r.name !== "realistic").map((r) => r.result.heapPerPodBytes),
  );
  const goals: Goal[] = [
    // 1000 pods at this cost within 64 MiB: a quarter of the chart's 256 MiB limit.
    atMost("pods", "heap per hostile pod (the most any kind costs)", hostileHeap / KiB, 64, "KiB"),
  ];
  return {
    name: "pods",
    title: "9. Pod memory",
    rows,
    goals,
    data: {
      kinds: results.map((r) => ({
        kind: r.name,
        count: r.count,
        jsonBytes: r.jsonBytes,
        heapPerPodBytes: round(r.result.heapPerPodBytes, 0),
        listMs: round(r.result.listMs, 1),
        rssBeforeBytes: r.result.rssBeforeBytes,
        peakRssBytes: r.result.peakRssBytes,
      })),
    },
  };
}
