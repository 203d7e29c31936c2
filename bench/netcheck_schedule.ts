/**
 * Figure 5, netcheck scheduling: a whole netcheck run on the in-memory
 * simulated cluster with 20 and 100 nodes, where every bandwidth session
 * lasts a fixed time. Each node can be in one bandwidth session at a time and
 * takes part in 2(N−1) of them, so the bandwidth phase needs at least
 * 2(N−1) session times; with concurrency N/2 the concurrency bound is the
 * same. Memory is compared between the two sizes: it must not grow with N.
 */
import { V8_FLAGS } from "../lib/os/v8_flags.ts";
import { fileURLToPath } from "node:url";
import type { NetcheckWorkerResult } from "./netcheck_worker.ts";
import { atMost, type FigureResult, fmt, type Goal, type Row } from "./report.ts";
import { max, median, round } from "./stats.ts";
import type { CleanupStack } from "../lib/os/cleanup_stack.ts";

export interface NetcheckScheduleOptions {
  quick: boolean;
}

const WORKER = fileURLToPath(new URL("./netcheck_worker.ts", import.meta.url));
const MiB = 2 ** 20;

async function runWorker(
  nodes: number,
  sessionMs: number,
  concurrency: number,
  cleanups: CleanupStack,
  peers = 0,
  rounds = 1,
): Promise<NetcheckWorkerResult> {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-all",
      // Lace's own V8 flags, as `lace netcheck` runs with them; gc() for the live-heap samples.
      `--v8-flags=${[...new Set(["--expose-gc", ...V8_FLAGS])].join(",")}`,
      WORKER,
      String(nodes),
      String(sessionMs),
      String(concurrency),
      ...(peers > 0 ? [String(peers), String(rounds)] : []),
    ],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  cleanups.push(async () => {
    try {
      child.kill("SIGKILL");
    } catch { /* exited */ }
    await child.status.catch(() => {});
  });
  const out = await child.output();
  if (!out.success) {
    throw new Error(
      `netcheck worker for ${nodes} nodes failed: ${new TextDecoder().decode(out.stderr).trim()}`,
    );
  }
  return JSON.parse(new TextDecoder().decode(out.stdout).trim().split("\n").at(-1)!);
}

export async function netcheckScheduling(
  opts: NetcheckScheduleOptions,
  cleanups: CleanupStack,
): Promise<FigureResult> {
  const sizes = opts.quick ? [6, 12] : [20, 100];
  const sessionMs = opts.quick ? 20 : 100;
  const results = [];
  for (const n of sizes) {
    const concurrency = Math.floor(n / 2);
    const r = await runWorker(n, sessionMs, concurrency, cleanups);
    const rounds = Math.max(2 * (n - 1), Math.ceil((n * (n - 1)) / concurrency));
    const boundMs = rounds * sessionMs;
    results.push({
      ...r,
      boundRounds: rounds,
      boundMs,
      ratio: round(r.bandwidthMs / boundMs, 3),
      // The same bound with each session as long as it really took (timers fire late on a busy machine).
      ratioMeasuredSessions: round(r.bandwidthMs / (rounds * r.meanSessionMs), 3),
      peakRssMiB: round(r.peakRssBytes / MiB, 1),
      maxLiveHeapMiB: round(max(r.liveHeapSamples) / MiB, 2),
    });
  }
  const [small, large] = results;
  const rows: Row[] = results.map((r) => ({
    measurement: `${r.nodes} nodes: bandwidth phase vs bound ${r.boundRounds} × ${sessionMs} ms`,
    value:
      `${fmt(r.bandwidthMs / 1000)} s vs ${fmt(r.boundMs / 1000)} s = ${r.ratio.toFixed(3)}×, ` +
      `${r.bandwidthSessions} sessions, max ${r.maxConcurrentSessions} at once, ${r.endpointOverlaps} overlaps; ` +
      `${r.ratioMeasuredSessions.toFixed(3)}× with sessions of ${
        fmt(r.meanSessionMs)
      } ms as measured`,
    goal: "≤ 1.15×",
  }));
  rows.push({
    measurement: `peak memory, ${large.nodes} vs ${small.nodes} nodes`,
    value: `RSS ${fmt(large.peakRssMiB)} vs ${fmt(small.peakRssMiB)} MiB; ` +
      `live heap ${fmt(large.maxLiveHeapMiB)} vs ${fmt(small.maxLiveHeapMiB)} MiB`,
    goal: "flat",
  });
  const goals: Goal[] = results.map((r) =>
    atMost(
      "netcheck",
      `${r.nodes} nodes: bandwidth phase / lower bound`,
      r.ratio,
      1.15,
      "×",
      r.endpointOverlaps
        ? "sessions shared an endpoint"
        : r.ratioMeasuredSessions <= 1.15
        ? `sessions took ${
          fmt(r.meanSessionMs)
        } ms instead of ${sessionMs} (late timers on a busy machine); against the measured session length the phase is ${r.ratioMeasuredSessions}× the bound`
        : `the scheduler left endpoints idle: ${r.ratioMeasuredSessions}× the bound even with the measured session length`,
    )
  );
  const rssGrowth = round(large.peakRssMiB / small.peakRssMiB, 3);
  const heapGrowth = round(large.maxLiveHeapMiB / small.maxLiveHeapMiB, 3);
  const flat = rssGrowth <= 1.25 && heapGrowth <= 1.25;
  goals.push({
    figure: "netcheck",
    name: `peak memory ${large.nodes} vs ${small.nodes} nodes`,
    target: "flat (peak RSS and live heap each ≤ 1.25×)",
    measured: `RSS ${rssGrowth}×, live heap ${heapGrowth}×`,
    met: flat,
    ...(flat ? {} : {
      reason: heapGrowth <= 1.25
        ? `the live heap after GC is flat (${heapGrowth}×) but peak RSS is not: the heap grows ` +
          `between collections with ${large.concurrency} sessions at once instead of ${small.concurrency}`
        : "the live heap grows with the number of nodes (or paths)",
    }),
  });
  if (results.some((r) => r.endpointOverlaps > 0)) {
    goals.push({
      figure: "netcheck",
      name: "no two bandwidth sessions share an endpoint",
      target: "0 overlaps",
      measured: results.map((r) => `${r.endpointOverlaps}`).join("/"),
      met: false,
      reason: "the endpoint locks let two sessions share a node",
    });
  }
  const sampled = await sampledRounds(opts, cleanups, rows, goals);
  return {
    name: "netcheck",
    title: "5. netcheck scheduling",
    rows,
    goals,
    data: { sessionMs, runs: results, rssGrowth, heapGrowth, sampled },
  };
}

/**
 * Thousands of nodes: one sampled round (8 peers a node for every phase, as above
 * --sample-threshold) at 100 and 5000 nodes, both with --concurrency 50 (the most 100 nodes can
 * use), so the two differ in the number of nodes only. Its bound: each node meets its peers of
 * the round's tournament matchings in both directions, 2 session times a matching, or the
 * concurrency bound. Memory: peak RSS of the 5000-node run against the 100-node run, and
 * against 100 nodes doing as many sessions as long (rounds of --watch back to back). The
 * rows name the full collections netcheck's heap gate made (lib/netcheck/pipeline/run.ts,
 * NETCHECK_HEAP_STEP) and their time: the price of a flat peak.
 */
async function sampledRounds(
  opts: NetcheckScheduleOptions,
  cleanups: CleanupStack,
  rows: Row[],
  goals: Goal[],
) {
  const { roundMatchings, sampledPairCount } = await import("../lib/netcheck/pairs/peers.ts");
  const peers = 8;
  const sizes = opts.quick ? [100, 1000] : [100, 5000];
  const sessionMs = opts.quick ? 10 : 50;
  const concurrency = 50;
  const runs = [];
  for (const n of sizes) {
    const r = await runWorker(n, sessionMs, concurrency, cleanups, peers);
    const [first, end] = roundMatchings(n, peers, 0);
    const rounds = Math.max(
      2 * (end - first),
      Math.ceil(sampledPairCount(n, peers, 0) / concurrency),
    );
    const ratio = round(r.bandwidthMs / (rounds * sessionMs), 3);
    const ratioMeasured = round(r.bandwidthMs / (rounds * r.meanSessionMs), 3);
    runs.push({ ...r, boundRounds: rounds, ratio, ratioMeasured });
    rows.push({
      measurement: `sampled round, ${n} nodes × ${peers} peers, concurrency ${concurrency}: ` +
        `bandwidth vs bound ${rounds} × ${sessionMs} ms`,
      value:
        `${fmt(r.bandwidthMs / 1000)} s = ${ratio.toFixed(3)}× (${ratioMeasured.toFixed(3)}× ` +
        `with sessions of ${
          fmt(r.meanSessionMs)
        } ms as measured), ${r.bandwidthSessions} sessions, ` +
        `${r.endpointOverlaps} overlaps`,
      goal: "≤ 1.15×",
    });
    goals.push(
      atMost(
        "netcheck",
        `sampled round, ${n} nodes: bandwidth / bound`,
        ratioMeasured,
        1.15,
        "×",
        "the scheduler left endpoints idle in a sampled round",
      ),
    );
  }
  const [small, large] = runs;
  // 100 nodes for as many sessions as the large run: rounds of --watch, the peers rotating.
  let sessions = 0, watchRounds = 0;
  while (sessions < large.bandwidthSessions) {
    sessions += sampledPairCount(small.nodes, peers, watchRounds++);
  }
  const long = await runWorker(small.nodes, sessionMs, concurrency, cleanups, peers, watchRounds);
  // Peak RSS of one run moves with V8's heap growth and the machine's load by about as much as
  // the goal allows: the figure is the median of three runs of each, alternating.
  const peaks = {
    small: [small.peakRssBytes],
    large: [large.peakRssBytes],
    long: [long.peakRssBytes],
  };
  for (let i = 1; i < (opts.quick ? 1 : 3); i++) {
    peaks.small.push(
      (await runWorker(small.nodes, sessionMs, concurrency, cleanups, peers)).peakRssBytes,
    );
    peaks.large.push(
      (await runWorker(large.nodes, sessionMs, concurrency, cleanups, peers)).peakRssBytes,
    );
    peaks.long.push(
      (await runWorker(small.nodes, sessionMs, concurrency, cleanups, peers, watchRounds))
        .peakRssBytes,
    );
  }
  const [smallPeak, largePeak, longPeak] = [peaks.small, peaks.large, peaks.long].map(median);
  const mib = (xs: number[]) => xs.map((x) => fmt(x / MiB)).join(", ");
  const total = round(largePeak / smallPeak, 3);
  const sameLength = round(largePeak / longPeak, 3);
  // How noisy the figure is: the ratio over every pairing of one large run with one small run.
  const spread = [
    Math.min(...peaks.large) / Math.max(...peaks.small),
    Math.max(...peaks.large) / Math.min(...peaks.small),
  ].map((x) => round(x, 3));
  const heap = (r: NetcheckWorkerResult) => fmt(max(r.liveHeapSamples) / MiB);
  rows.push({
    measurement:
      `sampled round, peak RSS ${large.nodes} vs ${small.nodes} nodes (median of ${peaks.small.length})`,
    value: `${fmt(largePeak / MiB)} vs ${fmt(smallPeak / MiB)} MiB = ${total}× ` +
      `(runs: ${mib(peaks.large)} vs ${mib(peaks.small)}; any run against any: ` +
      `${spread[0]}–${spread[1]}×); ` +
      `live heap after GC ${heap(large)} vs ${heap(small)} MiB; netcheck's own full ` +
      `collections ${large.collections} in ${fmt(large.collectionMs)} ms vs ` +
      `${small.collections} in ${fmt(small.collectionMs)} ms`,
    goal: "≤ 1.25×",
  });
  rows.push({
    measurement:
      `  … against ${small.nodes} nodes for ${watchRounds} rounds (${long.bandwidthSessions} ` +
      `sessions, ${fmt(long.bandwidthMs / 1000)} s)`,
    value: `${fmt(largePeak / MiB)} vs ${fmt(longPeak / MiB)} MiB = ${sameLength}× ` +
      `(runs: ${mib(peaks.long)}); live heap after GC ${heap(large)} vs ${heap(long)} MiB`,
    goal: "≤ 1.25×",
  });
  goals.push({
    figure: "netcheck",
    name: `sampled round, peak RSS ${large.nodes} vs ${small.nodes} nodes`,
    target: "≤ 1.25×",
    measured: `${total}× (single runs ${spread[0]}–${spread[1]}×; ${sameLength}× against ` +
      `${small.nodes} nodes running as long)`,
    met: total <= 1.25,
    ...(total <= 1.25 ? {} : {
      reason: sameLength <= 1.25
        ? `one ${small.nodes}-node round (${fmt(small.totalMs / 1000)} s) ends before V8 ` +
          `first grows its heap; ${small.nodes} nodes running as long reach ${sameLength}×`
        : "netcheck's memory grows with the number of nodes",
    }),
  });
  return [...runs, long];
}
